from otter.test_files import test_case

OK_FORMAT = False

name = "ab_bn_after_add"
points = 1

@test_case(points=None, hidden=False)
def test_ab_bn_after_add_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'ablations.check("bn_after_addition", runs_bn, answers_bn, prediction_bn)')

