"""AnimaHub: the platform-independent core.

litellm fetches a remote price map at import time unless told not to; the hub must start
offline, so the switch is set here, before any module can import litellm.
"""

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

__version__ = "0.1.0"
