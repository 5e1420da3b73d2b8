"""The drawing widgets: labelled heatmaps, the heads grid, axes, bars, the schematic, the model view."""
