"""View-models: for a stage kind, the plain data its panel draws (matrices with labels and colour scales,
bars, titles, notes), built Qt-free from (trace, stage, display settings). `view_for` picks the builder."""
