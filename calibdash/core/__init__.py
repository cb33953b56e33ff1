"""The core mathematics: the probability simplex, the notions of calibration, the risk (Eq. 20) and the statistics of holdout estimates."""
