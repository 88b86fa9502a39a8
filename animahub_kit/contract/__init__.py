"""The contract every platform adapter passes (DESIGN §9): harness.py (what a platform's
harness provides), cases.py (the cases), plugin.py (the pytest plugin that runs them once per
platform) and a harness for each of this repository's platforms (slack_harness.py, ...)."""
