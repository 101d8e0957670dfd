"""Reports about releases that are never part of one: accuracy against the ground truth."""
