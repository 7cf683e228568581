from otter.test_files import test_case

OK_FORMAT = False

name = "ab_gate_depth"
points = 1

@test_case(points=None, hidden=False)
def test_ab_gate_depth_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'ablations.check("gate_depth", runs_k_depth, answers_k_depth, prediction_k_depth)')

