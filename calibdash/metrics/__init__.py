"""The literature's estimators beside the ranked ones: ECE (Posocco & Bonnefoy), SKCE (Widmann et al.),
variational (Berta et al.), and recalibration maps."""
