"""The warm worker: runs inside the sandbox and executes one program at a time.

Started once per worker, inside bubblewrap when it works, by a bare interpreter that
imports this package and calls ``main()`` with ``--uid U --workdir D`` and the executor's
options (``pool.supervisor_command``), it reads one JSON job per line on stdin and answers
one JSON result per line on stdout.  Starting the sandbox once per worker instead of once per
program is what makes the pool fast; what keeps programs apart is done here per job:

* a fresh ``swipl`` process in a new session, in a fresh private directory;
* an unprivileged uid of its own when we are root (so RLIMIT_NPROC applies, and the
  program cannot touch the supervisor), and rlimits for CPU, address space, file size,
  open files and processes; stdin is /dev/null; the environment is empty but for PATH;
* the wall clock and the output size enforced here, by killing;
* after every job, *every* process the job left behind is killed (this process is a
  child subreaper, so even processes that escaped into a new session stay our
  descendants; as root we also kill everything running under the job's uid), and every
  file it left in the writable places is removed.

With ``--executor fork`` (the default of the pool) the fresh ``swipl`` is replaced by a
child forked from a booted SWI-Prolog, the fork server (``prolog/fork_server.pl``), that
this supervisor starts once and keeps running beside it: the child takes the job's uid,
FIFOs for stdout and stderr, its directory and flags, waits while this supervisor applies
its rlimits with prlimit(2), and then runs the program exactly as
``swipl -q -f program.pl -t halt`` would.  Everything else (the deadline, the output cap,
killing every process the job left, removing its files) is the same code for both
executors.  If the fork server dies it is restarted and the job retried once; if it
cannot start at all, programs run in fresh processes.

Standard library only, and no import of the rest of the package: it starts with ``-I
-S`` in a bare sandbox, where the pool puts the folder above this package on the path and
imports it as ``supervisor``, so its modules import each other relatively.  Its start is
on the way to a pool's first program, so it imports only what a job needs (no argparse,
typing or tempfile: together they doubled its start-up).  One job per module:

* ``main``: the command line and the loop over jobs;
* ``executor``: fork server or fresh process, restarts and the fallback;
* ``fork_server``: the booted SWI-Prolog and a program's run in its child;
* ``jobs``: a job's directory, command line and environment, and the fresh run;
* ``capture``: reading stdout and stderr under the wall clock and the caps;
* ``limits``: the rlimits; ``capabilities``: what a root supervisor's children keep;
* ``reaping``: killing every process a job left and removing its files.
"""

from .jobs import run_job
from .main import main
from .reaping import kill_everything

__all__ = ["kill_everything", "main", "run_job"]
