import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # library_env, the tests' small env on the kit
