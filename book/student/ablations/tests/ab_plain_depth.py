from otter.test_files import test_case

OK_FORMAT = False

name = "ab_plain_depth"
points = 1

@test_case(points=None, hidden=False)
def test_ab_plain_depth_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'ablations.check("plain_depth", runs_plain, answers_plain, prediction_plain)')

