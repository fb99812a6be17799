"""engine: the only code that runs models. Importing it fixes the heap's mmap threshold for this process
(:func:`attnbook.core.memory.fix_heap`: memory stays flat while batches stream)."""
from attnbook.core.memory import fix_heap

fix_heap()
