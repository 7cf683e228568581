"""What every page uses: the setup cell (setup.py), prose helpers (prose.py), figure style and
palette (figure_style.py, palette.py), readable log axes (log_axes.py), the repository URL
(repository.py)."""
