# Re-export everything, as sglang does.
from sglang.srt.utils.common import *
