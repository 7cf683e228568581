"""The figures: training curves (curves.py), the full recipe's runs (full_recipe.py), the claims'
effects (forest.py), the mechanisms', gates' and sliders' figures (mechanism_figures.py,
gate_figures.py with gate_words.py, keras_probe.py, slider_figures.py, trained_probes.py,
init_probes.py: chapter 4's), the synthesis page's figure and explorer (swap_figure.py,
explorer.py), drawings of the units (diagrams.py), the blocks chapters 7-10 repeat (blocks.py), and
"train it yourself" (live.py, yourself.py). Every trace takes its colour by what it draws
(page/palette.py's ``style``)."""
