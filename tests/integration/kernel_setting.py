# A kernel setting (a file under /proc/sys) that a test changes for a while.
#
# Such a setting belongs to the whole machine, and the README's test command
# runs the plain, ASan and TSan lanes side by side: two lanes' copies of one
# test would each save the other's value, restore it mid-way through the
# other, and leave the machine changed. Every test that changes one holds one
# machine-wide lock from its change to its restore, so such tests run one at
# a time across lanes, and each finds the machine's own value.
import fcntl
import os

LOCK_PATH = '/run/lock/pfmfs-tests-kernel-settings.lock'


class KernelSetting:
    """with KernelSetting(path, value): the setting holds value inside, and
    its value from before after (on any exit). value may be a function of
    the value from before (a string). Blocks while another test anywhere on
    the machine holds a setting changed."""

    def __init__(self, path, value):
        self.path, self.value = path, value
        self.lock_fd = None
        self.saved = None

    def __enter__(self):
        os.makedirs(os.path.dirname(LOCK_PATH), exist_ok=True)
        self.lock_fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        try:
            with open(self.path) as f:
                self.saved = f.read().strip()
            value = self.value(self.saved) if callable(self.value) else self.value
            with open(self.path, 'w') as f:
                f.write(f'{value}\n')
        except BaseException:
            os.close(self.lock_fd)
            raise
        return self

    def __exit__(self, *exc):
        try:
            with open(self.path, 'w') as f:
                f.write(self.saved + '\n')
        finally:
            os.close(self.lock_fd)  # releases the lock
        return False
