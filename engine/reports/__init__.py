"""Reports about releases that are never part of one: accuracy against the ground truth
(`accuracy`), and whole levels as arrays for the method comparisons (`levels`)."""
