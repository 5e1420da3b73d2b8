"""View-models: for a stage kind, the plain data its panel draws (matrices with labels and colour scales,
bars, titles, notes), built Qt-free from (trace, stage, display settings). present/kinds.py registers each
kind's builder (with its explanation page) and `kinds.view_for` picks it.

Every stage kind has one: the tokens, embeddings, positional encoding and layer input, Q/K/V, the score maps,
the mask, the heads grid, the token → token lines, weights·V, concat, W_O, add & norm, FFN, the output bars,
LayerNorm vs BatchNorm, the √dₖ explainer, the logit lens, the mixture of experts."""
