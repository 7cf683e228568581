from otter.test_files import test_case

OK_FORMAT = False

name = "ab_gate_bias"
points = 1

@test_case(points=None, hidden=False)
def test_ab_gate_bias_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'ablations.check("exclusive_gate_bias", runs_gate_bias, answers_gate_bias, prediction_gate_bias)')

