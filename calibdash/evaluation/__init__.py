"""Algorithm 1 of Gruber & Bach: the configuration, the tasks and their scheduling, the result, and model comparison."""
