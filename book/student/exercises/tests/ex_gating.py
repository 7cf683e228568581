from otter.test_files import test_case

OK_FORMAT = False

name = "ex_gating"
points = 1

@test_case(points=None, hidden=False)
def test_ex_gating_0(env):
    from idmap_class.editions import run_grading_cell
    run_grading_cell(env, 'checks.check_exclusive_gating(exclusive_gating)')

