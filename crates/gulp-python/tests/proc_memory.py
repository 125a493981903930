"""The memory a process wrote itself, from /proc/self/smaps (Linux): what
test_fork_memory.py bounds for forked DataLoader workers and
scripts/bench/bench_fork.py measures at full size (which imports this file
from here, so that the suite depends on nothing outside its folder)."""


def anonymous_private_dirty():
    """Private dirty bytes of this process's anonymous mappings (heap,
    stacks, anonymous maps: what it wrote, or copied from its parent on
    write). Not of file mappings: the pages of freshly written data files
    count as Private_Dirty there while they wait for writeback."""
    total, anonymous = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and not head[0].endswith(":"):
                anonymous = len(head) < 6 or head[5].startswith("[")
            elif anonymous and line.startswith("Private_Dirty:"):
                total += int(head[1]) * 1024
    return total
