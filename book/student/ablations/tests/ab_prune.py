from otter.test_files import test_case

OK_FORMAT = False

name = "ab_prune"
points = 1

@test_case(points=None, hidden=False)
def test_ab_prune_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'ablations.check("prune_by_k", runs_prune, answers_prune, prediction_prune)')

