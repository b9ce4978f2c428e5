/*  The fork server (the "zygote") of one sandbox worker.

    Started once per worker, inside the worker's sandbox, by the supervisor
    (deonticbench/solver/supervisor.py) as

        swipl --stack-limit=512m --no-packs -q -f none -t halt \
              -g "load_files('.../fork_server.pl', [silent(true), imports([])])" \
              -g fork_server:serve

    it boots SWI-Prolog once and then forks one child per program.  The child
    becomes what `swipl --stack-limit=S --no-packs -q -f program.pl -t halt`
    would have been: it takes the job's stdout and stderr (FIFOs the supervisor
    reads), its directory, environment and command-line flags, waits until the
    supervisor has applied the job's rlimits (prlimit(2), allowed only while
    the child still has the supervisor's uid), drops to the job's uid, and then
    runs the very boot steps SWI-Prolog runs for `-f file -t halt` (load the file
    as the init file, run initialization(_, program) and initialization(_, main)
    goals, then the toplevel goal `halt`).  The server itself never runs a
    program, never reads one, and stays undumpable (prctl), so a child, which
    runs under another uid, can neither signal, trace nor read it.

    Protocol: one Prolog term per line on the server's stdin, one line of text
    per reply on its stdout (both are moved off fds 0 and 1 first, so that the
    children inherit pristine standard streams):

        job(Dir, File, OutFifo, ErrFifo, Uid, StackBytes, OsArgv).
            -> "started <pid>" | "failed <message>"
        go.       (the supervisor has applied the child's rlimits)
            -> "exited <code>" | "signaled <signal>"
               | "failed set_up_failed(...)" (the child never ran the program)
        abort.    (the supervisor gave up on the child: it will kill it)
            -> "exited ..." | "signaled ..." once the child is gone
*/

:- module(fork_server, []).
%   Resolve this module's calls in `system` only: through the default `user`,
%   every built-in it calls would show up as imported into `user`, where a
%   program could see it.
:- set_module(base(system)).

:- use_module(library(unix), [fork/1, wait/2, dup/2, pipe/2, prctl/1]).
:- use_module(library(uid), [setuid/1, setgid/1, setgroups/1]).

%   Exit code of a child whose set-up failed before the program ran (the
%   server then replies "failed set_up_failed(...)", whatever the code).
setup_failed_code(125).

serve :-
    catch(boot, E, (print_message(error, E), halt(3))).

%   The control streams: fresh descriptors for the supervisor's pipes, while
%   fds 0 and 1 (behind user_input and user_output) become /dev/null, which is
%   where a child's stdin stays and its stdout is replaced.
boot :-
    check_internals,
    prctl(set_dumpable(false)),
    open('/dev/fd/0', read, In, [encoding(utf8), bom(false)]),
    open('/dev/fd/1', write, Out, [encoding(utf8)]),
    open('/dev/null', read, NullIn),
    open('/dev/null', write, NullOut),
    dup(NullIn, 0),
    dup(NullOut, 1),
    close(NullIn),
    close(NullOut),
    current_prolog_flag(pid, Pid),
    format(Out, "ready ~w~n", [Pid]),
    flush_output(Out),
    loop(In, Out).

%   The boot steps a child replays are SWI-Prolog internals: refuse to start
%   (the supervisor then runs programs in fresh processes) if this SWI-Prolog
%   does not have them, or if anything already registered program or main
%   initialization goals, which the children would otherwise inherit.
check_internals :-
    internals_present([ load_init_file/2, initialise_error/1, run_program_init/0,
                        run_main_init/0, '$toplevel'/0, version/0 ]),
    (   '$init_goal'(when(W), G, _)
    ->  throw(error(permission_error(fork, init_goal, W-G), _))
    ;   true
    ).

internals_present([]).
internals_present([PI|PIs]) :-
    (   current_predicate('$toplevel':PI)
    ->  internals_present(PIs)
    ;   throw(error(existence_error(procedure, '$toplevel':PI), _))
    ).

%   (Written out rather than with library(apply) or library(lists): every
%   library loaded here is loaded in every child too.)
strings_atoms([], []).
strings_atoms([S|Ss], [A|As]) :-
    atom_string(A, S),
    strings_atoms(Ss, As).

loop(In, Out) :-
    read_term(In, Request, [double_quotes(string)]),
    (   Request == end_of_file
    ->  halt(0)
    ;   handle(Request, In, Out),
        loop(In, Out)
    ).

handle(job(Dir, File, OutFifo, ErrFifo, Uid, Stack, OsArgv), In, Out) :-
    !,
    Job = job(Dir, File, OutFifo, ErrFifo, Uid, Stack, OsArgv),
    (   catch(start_child(Job, In, Out, Pid, GoWrite, SetUp), E, (failed(Out, E), fail))
    ->  reply(Out, "started ~w", [Pid]),
        read_term(In, Go, []),
        % The child blocks on this pipe until released; on anything but `go`
        % it reads end-of-file and exits without running the program.
        (   Go == go
        ->  catch(put_char(GoWrite, g), _, true)
        ;   true
        ),
        catch(close(GoWrite), _, true),
        wait(Pid, Status),
        % The child says on this pipe that it became the job, just before it
        % runs the program (which never holds the pipe).
        catch(get_char(SetUp, Said), _, Said = end_of_file),
        close(SetUp),
        (   Said == s
        ->  report(Out, Status)
        ;   failed(Out, set_up_failed(Status))
        )
    ;   true
    ).
handle(Request, _, Out) :-
    failed(Out, unknown_request(Request)).

start_child(Job, In, Out, Pid, GoWrite, SetUpRead) :-
    Job = job(_, _, OutFifo, ErrFifo, _, _, _),
    % The supervisor holds the read ends already, so these opens do not block.
    open(OutFifo, write, ChildOut),
    open(ErrFifo, write, ChildErr),
    pipe(GoRead, GoWrite),
    pipe(SetUpRead, SetUpWrite),
    flush_output(Out),
    fork(Pid),
    (   Pid == child
    ->  close(SetUpRead),
        child(Job, In, Out, ChildOut, ChildErr, GoRead, GoWrite, SetUpWrite)
    ;   close(ChildOut),
        close(ChildErr),
        close(GoRead),
        close(SetUpWrite)
    ).

report(Out, exited(Code)) :- !, reply(Out, "exited ~w", [Code]).
report(Out, signaled(Signal)) :- !, signal_number(Signal, N), reply(Out, "signaled ~w", [N]).
report(Out, Other) :- failed(Out, wait(Other)).

signal_number(N, N) :- integer(N), !.
signal_number(Name, N) :- catch(current_signal(Name, N, _), _, fail), !.
signal_number(_, 9).

failed(Out, Reason) :-
    format(string(Text), "~q", [Reason]),
    split_string(Text, "\n", "", Lines),
    atomic_list_concat(Lines, ' ', OneLine),
    reply(Out, "failed ~w", [OneLine]).

reply(Out, Format, Args) :-
    format(Out, Format, Args),
    nl(Out),
    flush_output(Out).

%!  child(+Job, +In, +Out, +ChildOut, +ChildErr, +GoRead, +GoWrite, +SetUp)
%
%   Runs in the forked child: never returns, always halts.
child(job(Dir, File, _, _, Uid, Stack, OsArgv), In, Out, ChildOut, ChildErr, GoRead, GoWrite,
      SetUp) :-
    (   catch(become_job(Dir, Uid, Stack, OsArgv, In, Out, ChildOut, ChildErr,
                         GoRead, GoWrite),
              E, (setup_failed(E), fail))
    ->  put_char(SetUp, s),
        close(SetUp),
        % Nothing may return into the server's loop.
        catch(run_as_fresh(File), _, initialisation_failed),
        halt(1)
    ;   setup_failed_code(Code),
        halt(Code)
    ).

setup_failed(E) :-
    catch(format(user_error, "fork_server: the child's set-up failed: ~q~n", [E]), _, true).

become_job(Dir, Uid, Stack, OsArgv, In, Out, ChildOut, ChildErr, GoRead, GoWrite) :-
    close(In),
    close(Out),
    close(GoWrite),
    dup(ChildOut, 1),
    dup(ChildErr, 2),
    close(ChildOut),
    close(ChildErr),
    working_directory(_, Dir),
    % The environment of a fresh swipl: PATH and LANG are the server's own.
    setenv('HOME', Dir),
    setenv('TMPDIR', Dir),
    set_prolog_flag(stack_limit, Stack),
    strings_atoms(OsArgv, OsArgvAtoms),
    set_prolog_flag(os_argv, OsArgvAtoms),
    % Without `-t Goal` a fresh swipl's toplevel goal is `default`: the
    % interactive toplevel (here reading end-of-file from /dev/null).
    (   memberchk("-t", OsArgv)
    ->  true
    ;   set_prolog_flag(toplevel_goal, default)
    ),
    % Block until the supervisor has set this process's rlimits with prlimit(2)
    % (library(rlimit) sets soft limits only, and not the address space); it
    % may do so only while we still have its uid.
    get_char(GoRead, Go),
    close(GoRead),
    Go == g,
    drop_privileges(Uid).
    % (No set_random/1 here: SWI-Prolog seeds its generator on first use, in
    % each child anew, as in a fresh process, because the server never uses it.)

drop_privileges(none) :- !.
drop_privileges(Uid) :-
    setgroups([]),
    setgid(Uid),
    setuid(Uid),
    % setuid() made us undumpable like our parent; a fresh process is not,
    % and may read its own /proc/self files.
    prctl(set_dumpable(true)).

%   The rest of what swipl does for `-f File -t halt` after booting (see
%   '$initialise'/0 and '$toplevel'/0 in boot/toplevel.pl): load the file as
%   the init file; with no initialization(_, main|program) goals print the
%   (silenced) banner, otherwise run them; then run the toplevel goal `halt`.
%   A failed or raising initialisation ends in exit code 1, as it does there.
run_as_fresh(File) :-
    (   catch(initialise_as_fresh(File), E, initialise_error(E))
    ->  (   catch('$toplevel':'$toplevel', E2, (print_message(error, E2), fail))
        ->  halt(0)
        ;   halt(1)
        )
    ;   initialisation_failed
    ).

%   abort/0 ('$aborted') is re-thrown once its handler completes: out of
%   '$initialise' in a fresh swipl, which then exits with 1 and says nothing.
initialise_error(E) :-
    (   E == '$aborted'
    ->  initialisation_failed
    ;   '$toplevel':initialise_error(E)
    ).

initialisation_failed :-
    close_program_streams,
    halt(1).

%   A fresh swipl halts from C after a failed initialisation, outside any
%   query; here halt/1 runs inside one, where closing a stream that cannot be
%   flushed (a file past RLIMIT_FSIZE: SIGXFSZ) while the halt hooks run
%   crashes SWI-Prolog 9.0.4.  Closing the program's output streams first, as
%   halt would, keeps the exit code 1 that a fresh process gives.
close_program_streams :-
    forall(( stream_property(S, mode(M)), M \== read,
             \+ stream_property(S, alias(user_output)),
             \+ stream_property(S, alias(user_error)) ),
           catch(close(S, [force(true)]), _, true)).

initialise_as_fresh(OsFile) :-
    prolog_to_os_filename(File, OsFile),
    '$toplevel':load_init_file(File, explicit),
    (   \+ '$init_goal'(when(_), _, _)
    ->  '$toplevel':version
    ;   '$toplevel':run_program_init,
        '$toplevel':run_main_init
    ).
