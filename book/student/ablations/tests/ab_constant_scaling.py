from otter.test_files import test_case

OK_FORMAT = False

name = "ab_constant_scaling"
points = 1

@test_case(points=None, hidden=False)
def test_ab_constant_scaling_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'ablations.check("constant_scaling", runs_scaling, answers_scaling, prediction_scaling)')

