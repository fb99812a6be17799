"""engine: the only code that runs models. Importing it configures the heap for this process
(:func:`attnbook.core.memory.configure_heap`: memory stays flat while batches stream, full speed elsewhere)."""
from attnbook.core.memory import configure_heap

configure_heap()
