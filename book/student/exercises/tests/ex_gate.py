from otter.test_files import test_case

OK_FORMAT = False

name = "ex_gate"
points = 1

@test_case(points=None, hidden=False)
def test_ex_gate_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'checks.check_gated_residual(GatedResidual)')

