"""The task board: delegation from a manager Anima, running a task, its report, where it posts."""
