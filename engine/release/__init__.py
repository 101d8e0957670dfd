"""What a run writes: OUT_DIR in the SafeTab-P layout (`outputs`) and `manifest.json`
with every privacy figure computed from the configuration (`manifest`)."""
