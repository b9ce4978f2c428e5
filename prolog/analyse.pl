/*  deonticbench's own Prolog: what a program says (static analysis) and how it reached
    the answer it printed (a proof of each goal that printed something).

    Run by the real SWI-Prolog inside the same sandbox, under the same limits, as the
    programs it analyses.  The harness sends a small driver program that consults this
    file, holds the target program as a string, and calls

        deonticbench_analyse(Mode, TargetText)      % Mode: static | full

    which prints ONE JSON object on stdout (see docs/analysis.md for every field).

    Reading is SWI-Prolog's own: library(prolog_xref) for definitions and calls (it reads
    a file without running its directives), and the ordinary compiler (load_files/2) for
    syntax errors, load warnings and the clauses the meta-interpreter walks.  While the
    target loads, every directive that would *run* something is recorded instead of run
    (declarations such as dynamic/1, use_module/1 or op/3 are executed as usual); the
    recorded goals are then re-run, in SWI-Prolog's order, under the meta-interpreter.
*/

:- module(deonticbench_analyse, [deonticbench_analyse/2, deonticbench_analyse_batch/2,
                                 deonticbench_numbers/1]).

:- use_module(library(prolog_xref)).
:- use_module(library(http/json)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(pairs)).
:- use_module(library(aggregate)).
:- use_module(library(time)).
:- use_module(library(occurs)).
:- use_module(library(ordsets)).

%!  analyser_version(-Version)
%   Bumped whenever an output field changes meaning: the Python side caches by it.
analyser_version('deonticbench-analyse/2').

% Bounds of one proof (the sandbox's wall clock, CPU and memory limits apply on top).
max_depth(300).             % nesting of user clauses followed
max_nodes(2000).            % proof nodes recorded per program (work budget)
max_solutions_kept(6).     % sub-proofs kept per findall/aggregate_all/forall
run_seconds(6).             % wall clock per re-run goal
program_seconds(15).        % wall clock for the whole analysis of one program

%   The program under analysis: its module and file (one per program of a batch).
:- dynamic current_target/2.
target_module(M) :- current_target(M, _).

:- dynamic directive_seen/5.        % directive_seen(Module, Seq, Line, Kind, Goal)
:- dynamic load_message/4.          % load_message(Module, Kind, Term, Line)
:- dynamic node_count/1.
:- dynamic consulted/2.             % consulted(Seq, Line-Fact): facts read, kept on failure

%   --- entry points -------------------------------------------------------------

%!  deonticbench_analyse(+Mode, +Text)
%   Analyse one program; print its report as one JSON line.
%   Mode: static (no goal re-run), full (static, the clauses' structure and the proofs)
%   or proof (full without the clauses' structure, which only the failure taxonomy
%   reads: a program whose answer was right skips it).
deonticbench_analyse(Mode, Text) :-
    clauses_wanted(Mode),
    analyse_one(Mode, 0, Text).

%!  deonticbench_analyse_batch(+Mode, +Texts)
%   Analyse several programs in one process (loading this analyser once), each in its
%   own module and file, each bounded on its own; one JSON line per program, with its
%   index, printed as soon as it is done.  A program that defeats a bound gets a line
%   with analyser_error, and the batch goes on.
%   Every program of a batch is read (cross-referenced and loaded) before any is run:
%   running one program's goals can load libraries that change how the next program
%   would be read.
deonticbench_analyse_batch(Mode, Texts) :-
    clauses_wanted(Mode),
    findall(I-Static, ( nth0(I, Texts, Text), read_one(I, Text, Static) ), Read),
    forall(member(I-Static, Read), report_one(Mode, I, Static)).

clauses_wanted(Mode) :-
    ( Mode == proof -> nb_setval(deonticbench_clauses, false)
    ; nb_setval(deonticbench_clauses, true) ).

%!  deonticbench_numbers(+Texts)
%   The numbers each clause of each program states (directives left out), read by
%   SWI-Prolog's reader without loading anything: one JSON line per program,
%   {"index": I, "clauses": [{"fact": Bool, "numbers": [...]}, ...]}.  The failure
%   taxonomy reads the domain's other reference programs this way, for the schedules
%   they state (a fact that states its case is the case's, not a schedule).
deonticbench_numbers(Texts) :-
    forall(nth0(I, Texts, Text),
           (   catch(text_clauses(Text, Cs), _, Cs = []),
               write_json(_{index: I, clauses: Cs}), nl
           )),
    flush_output.

json_number(N) :- number(N), N =:= N, N =\= inf, N =\= -inf.

text_clauses(Text, Clauses) :-
    setup_call_cleanup(open_string(Text, In), read_clauses(In, Clauses), close(In)).

read_clauses(In, Clauses) :-
    catch(read_term(In, T, []), _, T = '$syntax_error'),
    (   T == end_of_file -> Clauses = []
    ;   T = (:- _) -> read_clauses(In, Clauses)
    ;   T == '$syntax_error' -> read_clauses(In, Clauses)
    ;   findall(N, ( sub_term(N, T), number(N), json_number(N) ), Ns),
        ( T = (_ :- _) -> Fact = false ; Fact = true ),
        (   Ns == [] -> Clauses = Rest
        ;   Clauses = [_{fact: Fact, numbers: Ns}|Rest]
        ),
        read_clauses(In, Rest)
    ).

analyse_one(Mode, I, Text) :-
    read_one(I, Text, Static),
    report_one(Mode, I, Static).

select_target(I, Module, File) :-
    format(atom(Name), 'target_~w.pl', [I]),
    format(atom(Module), 'deonticbench_target_~w', [I]),
    absolute_file_name(Name, File),
    retractall(current_target(_, _)),
    assertz(current_target(Module, File)).

%   Static is the static report, or error(Why).
read_one(I, Text, Static) :-
    select_target(I, Module, File),
    setup_call_cleanup(open(File, write, Out, [encoding(utf8)]),
                       write(Out, Text),
                       close(Out)),
    retractall(directive_seen(Module, _, _, _, _)),
    retractall(load_message(Module, _, _, _)),
    flag(deonticbench_directive_seq, _, 0),
    program_seconds(Budget),
    catch(call_with_time_limit(Budget, without_autoload(static_report(File, Static0))), E, true),
    (   var(E) -> Static = Static0 ; error_text(E, Why), Static = error(Why) ),
    catch(xref_clean(File), _, true).

%   Reading never autoloads from the library index: asking whether a library defines
%   main/0 would load library(main), after which the cross-referencer reads
%   `initialization(main, main)` of every later program as a call of main/1.  The flag
%   is `explicit`, not `false`: `false` first loads every library that a loaded module
%   declared with autoload/2 (50 files, a sixth of a second for each analyser job),
%   while `explicit` leaves those declarations to load when they are first called.
without_autoload(Goal) :-
    current_prolog_flag(autoload, Old),
    setup_call_cleanup(set_prolog_flag(autoload, explicit),
                       Goal,
                       set_prolog_flag(autoload, Old)).

report_one(Mode, I, Static) :-
    select_target(I, _, _),
    analyser_version(Version),
    program_seconds(Budget),
    (   Static = error(Why)
    ->  Dict = _{index: I, analyser: Version, analyser_error: Why}
    ;   Mode \== static
    ->  catch(call_with_time_limit(Budget, run_recorded_goals(Runs)), E, true),
        (   var(E)
        ->  Dict = _{index: I, analyser: Version, static: Static, runs: Runs}
        ;   error_text(E, Why2),
            Dict = _{index: I, analyser: Version, analyser_error: Why2}
        )
    ;   Dict = _{index: I, analyser: Version, static: Static, runs: []}
    ),
    write_json(Dict),
    nl,
    flush_output.

%!  write_json(+Value)
%   Value as compact JSON on current_output, read by any JSON reader as
%   json_write_dict/3 with width(0) writes it (dicts, lists, strings, atoms, numbers;
%   true, false and null as JSON's own).  The library's writer dispatches every value
%   through its hooks, options and layout state; for the proof trees of a report that
%   was a third of an analysis's CPU time.  Strings are escaped by the library's own
%   foreign json_write_string/2.
write_json(V) :- var(V), !, instantiation_error(V).
write_json(D) :- is_dict(D), !,
    dict_pairs(D, _, Pairs),
    put_char('{'),
    write_json_pairs(Pairs),
    put_char('}').
write_json([]) :- !, write('[]').
write_json([H|T]) :- !,
    put_char('['),
    write_json(H),
    write_json_items(T),
    put_char(']').
write_json(N) :- integer(N), !, write(N).
write_json(N) :- float(N), !, write(N).
write_json(N) :- number(N), !, F is float(N), write(F).     % a rational
write_json(true) :- !, write(true).
write_json(false) :- !, write(false).
write_json(null) :- !, write(null).
write_json(T) :- ( atom(T) ; string(T) ), !,
    current_output(S),
    json:json_write_string(S, T).
write_json(T) :- type_error(json_term, T).

write_json_items([]).
write_json_items([H|T]) :-
    put_char(','),
    write_json(H),
    write_json_items(T).

write_json_pairs([]).
write_json_pairs([K-V|T]) :-
    current_output(S),
    json:json_write_string(S, K),
    put_char(':'),
    write_json(V),
    (   T == []
    ->  true
    ;   put_char(','),
        write_json_pairs(T)
    ).

%   --- loading the target without running it ---------------------------------

%   Directives of the target are recorded, not run, when they would execute goals.
system:term_expansion((:- Directive), Expanded) :-
    current_target(M, File),
    prolog_load_context(source, File),      % the target itself, never a library it loads
    prolog_load_context(module, M),
    \+ declaration(Directive),
    prolog_load_context(term_position, Pos),
    stream_position_data(line_count, Pos, Line),
    directive_kind(Directive, Kind, Goal),
    (   Kind == ignored
    ->  true
    ;   flag(deonticbench_directive_seq, Seq, Seq+1),
        assertz(directive_seen(M, Seq, Line, Kind, Goal))
    ),
    Expanded = [].

declaration(Var) :- var(Var), !, fail.
declaration((A, B)) :- !, declaration(A), declaration(B).
declaration(D) :-
    compound(D),
    compound_name_arity(D, Name, Arity),
    memberchk(Name/Arity,
              [ (dynamic)/1, (discontiguous)/1, (multifile)/1, use_module/1,
                use_module/2, ensure_loaded/1, set_prolog_flag/2, op/3, style_check/1,
                (table)/1, encoding/1, license/1, (meta_predicate)/1,
                (module_transparent)/1, (det)/1, autoload/1, autoload/2
              ]).

directive_kind(module(_, _), ignored, true) :- !.      % stay in our module
directive_kind(initialization(G), initialization, G) :- !.
directive_kind(initialization(G, now), directive, G) :- !.
directive_kind(initialization(G, main), main, G) :- !.
directive_kind(initialization(G, _), initialization, G) :- !.
directive_kind(G, directive, G).

:- multifile user:message_hook/3.
user:message_hook(Term, Kind, _Lines) :-
    memberchk(Kind, [error, warning]),
    prolog_load_context(module, M),
    target_module(M),
    (   source_location(_, Line) -> true ; Line = null ),
    assertz(load_message(M, Kind, Term, Line)),
    fail.

load_target(File) :-
    target_module(M),
    style_check(+singleton),
    catch(M:load_files(File, [silent(true)]), E, assertz(load_message(M, error, E, null))).

%   --- static report ------------------------------------------------------------

static_report(File, Static) :-
    catch(xref_source(File, [silent(true), comments(ignore)]), _, true),
    load_target(File),
    findall(D, defined_entry(File, D), Defined0),
    sort(line, @=<, Defined0, Defined),
    findall(N-A, (xref_called(File, H, _), \+ xref_hidden(H), functor(H, N, A)), Called0),
    sort(Called0, Called1),
    maplist(pi_dict, Called1, Called),
    findall(U, undefined_entry(File, U), Undefined0),
    sort(Undefined0, Undefined),
    findall(E, syntax_error_entry(E), Syntax),
    findall(W, warning_entry(W), Warnings),
    findall([N, A], signature(File, N, A), Sigs0),
    sort(Sigs0, Sigs),
    findall(F, fail_rule(F), FailRules),
    program_constants(Constants),
    (   nb_current(deonticbench_clauses, false)
    ->  Structure = []
    ;   clause_structure(Structure)
    ),
    target_module(M),
    findall(_{line: L, kind: K, goal: T},
            ( directive_seen(M, _, L, K, G), term_text(G, T) ), Directives),
    Static = _{ defined: Defined, called: Called, undefined: Undefined,
                syntax_errors: Syntax, warnings: Warnings, signatures: Sigs,
                fail_rules: FailRules, directives: Directives,
                constants: Constants, clauses: Structure }.

xref_hidden(H) :- functor(H, N, _), sub_atom(N, 0, _, _, '$').

pi_dict(N-A, _{name: N, arity: A}).

defined_entry(File, _{name: N, arity: A, line: L}) :-
    xref_defined(File, H, How),
    how_line(How, L),
    functor(H, N, A).

how_line(local(L), L) :- !.
how_line(dynamic(L), L) :- !.
how_line(multifile(L), L) :- !.
how_line(_, null).

%   Called, not defined by the program, not built in, not in an autoloadable library.
undefined_entry(File, _{name: N, arity: A, by: ByText}) :-
    xref_called(File, H, By),
    \+ xref_hidden(H),
    \+ xref_defined(File, H, _),
    \+ known_elsewhere(H),
    functor(H, N, A),
    caller_text(By, ByText).

caller_text(By, T) :- functor(By, N, A), format(string(T), "~w/~w", [N, A]).

known_elsewhere(H) :- predicate_property(system:H, defined), !.
known_elsewhere(H) :- functor(H, N, A), functor(G, N, A), '$autoload':library_index(G, _, _), !.
known_elsewhere(H) :- target_module(M), predicate_property(M:H, imported_from(_)), !.

%   S(P) of paper B.5.2: every predicate the program defines (clause heads, facts
%   included) and every predicate it calls that is neither built in nor from a library;
%   name/arity pairs, so comments and layout play no part.
signature(File, N, A) :-
    (   xref_defined(File, H, How), How \= imported(_)
    ;   xref_called(File, H, _), \+ xref_defined(File, H, _), \+ known_elsewhere(H)
    ),
    \+ xref_hidden(H),
    functor(H, N, A).

%   Every constant the program's clauses state (heads and bodies, facts and rules):
%   numbers, atoms and strings, each once.  Predicate names are not constants.
program_constants(Constants) :-
    target_module(M),
    findall(V,
            ( current_predicate(M:N/A), functor(H, N, A),
              \+ predicate_property(M:H, imported_from(_)),
              catch(clause(M:H, B), _, fail),
              clause_constant(H-B, X), json_value(X, V) ),
            All),
    sort(All, Constants).

clause_constant(T, X) :-
    sub_term(X, T), atomic(X), X \== [],
    \+ goal_name(X, T).

%   An atom that only names a goal (a 0-arity call such as `eligible`) is a predicate
%   name, not a constant; it is kept when it also occurs as an argument.
goal_name(X, _) :- \+ atom(X), !, fail.
goal_name(X, H-B) :- ( H == X, B \== true ; body_goal_atom(B, X) ), !.

body_goal_atom(B, X) :- B == X, !.
body_goal_atom(B, X) :-
    compound(B), B =.. [F|Args],
    memberchk(F, [',', ';', '->', '*->', '\\+', findall, forall, once, ignore, call]),
    member(A, Args), body_goal_atom(A, X), !.

%   --- the structure of the program's clauses, without its names ----------------
%
%   What the failure taxonomy compares with the reference program's clauses
%   (deonticbench/analysis/structure.py): every clause as SWI-Prolog compiled it, with
%   the name of every predicate the program defines written '$p' (a model never uses
%   the reference's names) and its variables numbered, reduced to hashes:
%     f   whether it is a fact;
%     h   the clause itself;
%     s   the clause with every number written '#' (the same structure, other numbers);
%     o   the same with every arithmetic operator and comparison written '$op' too;
%     ops, n   those operators and numbers, in order;
%     c   the names each '$p' of the clause stands for, in order (the head's first);
%     t   the clause with one call of a defined predicate negated (`p` -> `\+ p`, or
%         `\+ p` -> `p`), one hash per call;
%     d   the clause with one such call dropped from its conjunction;
%     b   the clause with the body of a sibling (another clause of its predicate, head
%         variables shared by position), for predicates of at most 8 clauses;
%     bh  the body alone (a sibling's body copied with other head variables is still
%         the sibling's body).
%   A fact's hash is its head's (a fact is `H :- true`, the same for every fact), and its
%   entry stops after c.
%   The calls are numbered as prolog/mutate.pl numbers them, so that a planted fault
%   and its recognition are the same operation on terms.
clause_structure(Entries) :-
    target_module(M),
    findall(N/A, own_predicate(M, N, A), Defined),
    findall(N, member(N/_, Defined), Names0), sort(Names0, Names),
    findall(E, ( member(N/A, Defined), predicate_entries(M, N/A, Names, Es),
                 member(E, Es) ),
            Entries0),
    % In file order, whatever order the predicates are enumerated in (stable sorts:
    % clauses of a line keep their predicate's order).
    sort(p, @=<, Entries0, Entries1),
    sort(l, @=<, Entries1, Entries).

own_predicate(M, N, A) :-
    current_predicate(M:N/A), functor(H, N, A),
    \+ predicate_property(M:H, imported_from(_)),
    \+ predicate_property(M:H, built_in).

%   Each clause is written with '$p' for the program's own names once; its variants are
%   made on that term (a call of a defined predicate is then a '$p' goal).
predicate_entries(M, N/A, Names, Entries) :-
    functor(H, N, A),
    findall(c(AH, AB, Line, Called),
            ( catch(clause(M:H, B, Ref), _, fail), clause_line(Ref, Line),
              abstract_names((H :- B), Names, (AH :- AB), Called, []) ),
            Clauses),
    length(Clauses, Count),
    format(string(P), "~w/~w", [N, A]),
    findall(E, ( nth0(I, Clauses, C), clause_entry(P, Count, I, Clauses, C, E) ), Entries).

%   A fact has no operators, calls or siblings: its entry is the first fields only.
clause_entry(P, _, _, _, c(H, true, Line, Called0), Entry) :- !,
    term_hash_of(H, Hash),
    maplist(atom_string, Called0, Called),
    blank_numbers(H, Blank, Numbers),
    term_hash_of(Blank, Shape),
    maplist(json_value, Numbers, NumbersJ),
    Entry = _{p: P, l: Line, f: true, h: Hash, s: Shape, o: Shape, n: NumbersJ, c: Called}.
clause_entry(P, Count, I, Clauses, c(H, B, Line, Called0), Entry) :-
    term_hash_of((H :- B), Hash),
    maplist(atom_string, Called0, Called),
    blank_numbers((H :- B), Blank, Numbers),
    term_hash_of(Blank, Shape),
    blank_operators(Blank, Blind, Ops),
    term_hash_of(Blind, Blindh),
    term_hash_of(B, BodyHash),
    call_count(B, Calls),
    Last is Calls - 1,
    findall(X, ( between(0, Last, K), rewritten((H :- B), K, negate, V),
                 term_hash_of(V, X) ), Toggles),
    findall(X, ( between(0, Last, K), rewritten((H :- B), K, drop, V),
                 term_hash_of(V, X) ), Drops),
    (   Count =< 8
    ->  findall(X, ( nth0(J, Clauses, c(H2, B2, _, _)), J =\= I, B2 \== true,
                     with_sibling_body(H, H2, B2, V),
                     term_hash_of(V, X) ), Siblings)
    ;   Siblings = []
    ),
    maplist(json_value, Numbers, NumbersJ),
    Entry = _{p: P, l: Line, f: false, h: Hash, s: Shape, o: Blindh, ops: Ops, n: NumbersJ,
              c: Called, t: Toggles, d: Drops, b: Siblings, bh: BodyHash}.

%   variant_sha1/2 hashes a term up to the names of its variables (variants hash alike),
%   so the clause needs no copy; 12 hex digits are plenty for a program's clauses.
term_hash_of(T, Hash) :-
    variant_sha1(T, Sha),
    sub_string(Sha, 0, 12, _, Hash).

%   Every atom and functor that names a predicate the program defines becomes '$p'.
abstract_names(T, Names, A) :- abstract_names(T, Names, A, _, []).

%   ... and the names so replaced, in order (functor before arguments): which predicate
%   each '$p' stands for, for the comparison that pairs the two programs' predicates.
abstract_names(T, _, T, L, L) :- var(T), !.
abstract_names(T, Names, A, L0, L) :-
    atom(T), !,
    (   ord_memberchk(T, Names) -> A = '$p', L0 = [T|L] ; A = T, L0 = L ).
abstract_names(T, _, T, L, L) :- \+ compound(T), !.
abstract_names(T, Names, A, L0, L) :-
    compound_name_arguments(T, F, Args),
    (   ord_memberchk(F, Names) -> F2 = '$p', L0 = [F|L1] ; F2 = F, L0 = L1 ),
    abstract_all(Args, Names, Args2, L1, L),
    compound_name_arguments(A, F2, Args2).

abstract_all([], _, [], L, L).
abstract_all([X|Xs], Names, [Y|Ys], L0, L) :-
    abstract_names(X, Names, Y, L0, L1),
    abstract_all(Xs, Names, Ys, L1, L).

blank_numbers(T, B, Ns) :- blank_numbers(T, B, Ns, []).

%   (difference lists: append/2 checked its list argument at every node)
blank_numbers(T, T, L, L) :- var(T), !.
blank_numbers(T, '#', [T|L], L) :- number(T), !.
blank_numbers(T, T, L, L) :- \+ compound(T), !.
blank_numbers(T, B, L0, L) :-
    compound_name_arguments(T, F, Args),
    blank_numbers_all(Args, Args2, L0, L),
    compound_name_arguments(B, F, Args2).

blank_numbers_all([], [], L, L).
blank_numbers_all([X|Xs], [Y|Ys], L0, L) :-
    blank_numbers(X, Y, L0, L1), blank_numbers_all(Xs, Ys, L1, L).

%   The operators of arithmetic (right of is/2, both sides of a comparison) and the
%   comparisons themselves become '$op'; their names are listed in order.
blank_operators(T, B, Ops) :- blank_operators(T, B, Ops, []).

blank_operators(T, T, L, L) :- var(T), !.
blank_operators(T, T, L, L) :- \+ compound(T), !.
blank_operators(X is E, X is E2, L0, L) :- !, blank_arith(E, E2, L0, L).
blank_operators(T, '$op'(X2, Y2), [F|L0], L) :-
    compound_name_arguments(T, F, [X, Y]), comparison(T), !,
    blank_arith(X, X2, L0, L1), blank_arith(Y, Y2, L1, L).
blank_operators(T, B, L0, L) :-
    compound_name_arguments(T, F, Args),
    blank_operators_all(Args, Args2, L0, L),
    compound_name_arguments(B, F, Args2).

blank_operators_all([], [], L, L).
blank_operators_all([X|Xs], [Y|Ys], L0, L) :-
    blank_operators(X, Y, L0, L1), blank_operators_all(Xs, Ys, L1, L).

blank_arith(E, E, L, L) :- \+ compound(E), !.
blank_arith(E, B, [F|L0], L) :-
    compound_name_arguments(E, F, Args),
    blank_arith_all(Args, Args2, L0, L),
    compound_name_arguments(B, '$op', Args2).

blank_arith_all([], [], L, L).
blank_arith_all([X|Xs], [Y|Ys], L0, L) :-
    blank_arith(X, Y, L0, L1), blank_arith_all(Xs, Ys, L1, L).

%   Calls of defined predicates in a body, counted through `,`, `;`, `->` and `\+` (a
%   negated call counts once), as prolog/mutate.pl counts them.
call_count(B, N) :- rewrite_body(B, -1, count, _, 0, N).

rewritten((H :- B0), K, How, V) :-
    rewrite_body(B0, K, How, B1, 0, _),
    simplify_dropped(B1, B),
    ( B == true -> V = H ; V = (H :- B) ).    % a rule left without a body is a fact

%   rewrite_body(+Body, +K, +How, -Body2, +Seen0, -Seen): Seen counts the calls passed.
rewrite_body(B, _, _, B, C, C) :- var(B), !.
rewrite_body((A0, B0), K, How, (A, B), C0, C) :- !,
    rewrite_body(A0, K, How, A, C0, C1), rewrite_body(B0, K, How, B, C1, C).
rewrite_body((A0 ; B0), K, How, (A ; B), C0, C) :- !,
    rewrite_body(A0, K, How, A, C0, C1), rewrite_body(B0, K, How, B, C1, C).
rewrite_body((A0 -> B0), K, How, (A -> B), C0, C) :- !,
    rewrite_body(A0, K, How, A, C0, C1), rewrite_body(B0, K, How, B, C1, C).
rewrite_body(\+ G, K, How, G2, C0, C) :-
    own_call(G), !,
    C is C0 + 1,
    (   C0 =:= K
    ->  ( How == negate -> G2 = G ; G2 = '$dropped' )
    ;   G2 = (\+ G)
    ).
rewrite_body(\+ A0, K, How, \+ A, C0, C) :- !, rewrite_body(A0, K, How, A, C0, C).
rewrite_body(G, K, How, G2, C0, C) :-
    own_call(G), !,
    C is C0 + 1,
    (   C0 =:= K
    ->  ( How == negate -> G2 = (\+ G) ; G2 = '$dropped' )
    ;   G2 = G
    ).
rewrite_body(G, _, _, G, C, C).

%   A call of a predicate the program defines, its name already written '$p'.
own_call(G) :- nonvar(G), ( G == '$p' -> true ; compound(G), compound_name_arity(G, '$p', _) ).

simplify_dropped(B, B) :- var(B), !.
simplify_dropped((A0, B0), B) :- !,
    simplify_dropped(A0, A), simplify_dropped(B0, B1),
    (   A == true, A0 == '$dropped' -> B = B1
    ;   B1 == true, B0 == '$dropped' -> B = A
    ;   B = (A, B1)
    ).
simplify_dropped((A0 ; B0), (A ; B)) :- !, simplify_dropped(A0, A), simplify_dropped(B0, B).
simplify_dropped((A0 -> B0), (A -> B)) :- !, simplify_dropped(A0, A), simplify_dropped(B0, B).
simplify_dropped(\+ A0, \+ A) :- !, simplify_dropped(A0, A).
simplify_dropped('$dropped', true) :- !.
simplify_dropped(G, G).

with_sibling_body(H, H2, B2, (H :- B)) :-
    copy_term(H2-B2, H3-B),
    H =.. [_|Args], H3 =.. [_|Args3],
    maplist(share_variable, Args, Args3).

share_variable(X, Y) :- ( var(X), var(Y) -> X = Y ; true ).

%   Clauses whose whole body is fail/false: a decision hard-coded to fail.
fail_rule(_{name: N, arity: A, line: L}) :-
    target_module(M),
    current_predicate(M:N/A),
    functor(H, N, A),
    \+ predicate_property(M:H, imported_from(_)),
    catch(clause(M:H, Body, Ref), _, fail),
    ( Body == fail ; Body == false ),
    clause_line(Ref, L).

syntax_error_entry(_{line: L, column: C, message: Msg}) :-
    target_module(M),
    load_message(M, error, Term, _),
    Term = error(syntax_error(_), Where),
    where_position(Where, L, C),
    message_text(Term, Msg).

where_position(file(_, L, LinePos, _), L, C) :- !, C is LinePos + 1.
where_position(stream(_, L, LinePos, _), L, C) :- !, C is LinePos + 1.
where_position(_, null, null).

warning_entry(_{kind: K, line: L, message: Msg}) :-
    target_module(M),
    load_message(M, Kind, Term, L0),
    \+ Term = error(syntax_error(_), _),
    warning_kind(Kind, Term, K),
    message_line(Term, L0, L),
    message_text(Term, Msg).

warning_kind(_, singletons(_, _), singleton) :- !.
warning_kind(_, error(permission_error(modify, static_procedure, _), _), redefined_builtin) :- !.
warning_kind(_, error(permission_error(_, _, _), _), permission) :- !.
warning_kind(_, ignored_weak_import(_, _), redefined_library) :- !.
warning_kind(_, local_definition(_, _), redefined_library) :- !.
warning_kind(_, redefined_procedure(_, _), redefined) :- !.
warning_kind(_, discontiguous(_, _), discontiguous) :- !.
warning_kind(error, _, error) :- !.
warning_kind(_, _, other).

message_line(error(_, file(_, L, _, _)), _, L) :- !.
message_line(_, L, L).

%   The message as SWI-Prolog words it, without the file:line prefix (the line is a
%   field of its own).
message_text(Term0, Text) :-
    (   Term0 = error(E, _) -> Term = error(E, _) ; Term = Term0 ),
    catch(( message_to_codes(Term, Codes) -> string_codes(Text1, Codes) ; Text1 = "" ),
          _, Text1 = ""),
    split_string(Text1, "", " \n", [Text0]),
    (   Text0 == ""
    ->  term_text(Term, Text)
    ;   Text = Text0
    ).

message_to_codes(Term, Codes) :-
    '$messages':translate_message(Term, Lines, []),
    with_output_to(codes(Codes), print_message_lines(current_output, '', Lines)).

%   --- re-running the goals that print -----------------------------------------

%   SWI-Prolog's order: plain directives in file order while loading, then
%   initialization/1 goals in file order, then the initialization(G, main) goal, after
%   which the program halts.  A goal calling halt/0,1 ends the program there.
run_recorded_goals(Runs) :-
    target_module(M),
    findall(Seq-d(L, directive, G), directive_seen(M, Seq, L, directive, G), Plain),
    findall(Seq-d(L, initialization, G), directive_seen(M, Seq, L, initialization, G), Init),
    findall(Seq-d(L, main, G), directive_seen(M, Seq, L, main, G), Main),
    pairs_values(Plain, P), pairs_values(Init, I), pairs_values(Main, Ms),
    append([P, I, Ms], Goals),
    nb_setval(deonticbench_halted, false),
    run_goals(Goals, Runs).

run_goals([], []).
run_goals([d(Line, Kind, Goal)|Rest], [Run|Runs]) :-
    run_one(Line, Kind, Goal, Run),
    (   ( get_dict(status, Run, halt) ; Kind == main )
    ->  Runs = []
    ;   run_goals(Rest, Runs)
    ).

run_one(Line, Kind, Goal, Run) :-
    term_text(Goal, GoalText),
    retractall(node_count(_)),
    assertz(node_count(0)),
    retractall(consulted(_, _)),
    flag(deonticbench_consulted, _, 0),
    run_seconds(Seconds),
    copy_term(Goal, G),
    nb_setval(deonticbench_undefined, null),
    catch(with_output_to(string(Output),
                         run_status(G, Seconds, Status, Nodes, Error)),
          E, ( Output = "", Status = error, Nodes = [], error_text(E, Error) )),
    nb_getval(deonticbench_undefined, Undefined0),
    (   Undefined0 = N/A -> format(string(Undefined), "~w/~w", [N, A]) ; Undefined = null ),
    failed_steps(Failed),
    (   Failed == [] -> AllNodes = Nodes ; append(Nodes, [attempts(Failed)], AllNodes) ),
    proof_json(AllNodes, Proof),
    node_count(Count),
    max_nodes(Max),
    ( Count > Max -> Truncated = true ; Truncated = false ),
    Run = _{ line: Line, kind: Kind, goal: GoalText, output: Output, status: Status,
             error: Error, undefined: Undefined, proof: Proof, nodes: Count,
             truncated: Truncated }.

run_status(G, Seconds, Status, Nodes, Error) :-
    catch(call_with_time_limit(Seconds, prove_list(G, 0, Nodes0)), E, true),
    (   var(E)
    ->  Nodes = Nodes0, Error = null,
        ( nb_getval(deonticbench_halted, true) -> Status = halt ; Status = true )
    ;   E == time_limit_exceeded
    ->  Status = limit, Nodes = [], Error = "time limit of the proof"
    ;   Status = error, Nodes = [], error_text(E, Error),
        (   E = error(existence_error(procedure, PI0), _)
        ->  strip_module(PI0, _, PI), nb_setval(deonticbench_undefined, PI)
        ;   true
        )
    ), !.
run_status(_, _, false, [], null).

error_text(E, Text) :-
    catch(( message_to_codes(E, Codes), string_codes(Text, Codes) ), _, term_text(E, Text)).

%   --- the meta-interpreter ----------------------------------------------------

%!  prove_list(+Goal, +Depth, -Nodes) is nondet.
%   Nodes is the proof of Goal, one node per step, in execution order.
prove_list(G, D, Nodes) :- pr(G, D, Nodes, []).

pr(G, _, _, _) :- var(G), !, throw(error(instantiation_error, _)).
pr(_:G, D, L0, L) :- !, pr(G, D, L0, L).
pr(true, _, L, L) :- !.
pr((A, B), D, L0, L) :- !, pr(A, D, L0, L1), pr(B, D, L1, L).
pr((C -> T ; E), D, L0, L) :- !,
    copy_term(C, C0),
    consulted_mark(Seen),
    (   prove_list(C, D, CN)
    ->  L0 = [ite(then, C0, CN)|L1], pr(T, D, L1, L)
    ;   failed_condition(C, Seen, CN), L0 = [ite(else, C0, CN)|L1], pr(E, D, L1, L)
    ).
pr((C *-> T ; E), D, L0, L) :- !,
    copy_term(C, C0),
    consulted_mark(Seen),
    (   prove_list(C, D, CN)
    *-> L0 = [ite(then, C0, CN)|L1], pr(T, D, L1, L)
    ;   failed_condition(C, Seen, CN), L0 = [ite(else, C0, CN)|L1], pr(E, D, L1, L)
    ).
pr((C -> T), D, L0, L) :- !,
    copy_term(C, C0),
    (   prove_list(C, D, CN)
    ->  L0 = [ite(then, C0, CN)|L1], pr(T, D, L1, L)
    ).
pr((A ; B), D, L0, L) :- !,
    (   L0 = [or(left)|L1], pr(A, D, L1, L)
    ;   L0 = [or(right)|L1], pr(B, D, L1, L)
    ).
pr(\+ G, D, L0, L) :- !, negation(G, D, L0, L).
pr(not(G), D, L0, L) :- !, negation(G, D, L0, L).
pr(call(G), D, L0, L) :- !, pr(G, D, L0, L).
pr(G, D, L0, L) :-
    compound(G), compound_name_arguments(G, call, [G0|Extra]), !,
    extend_goal(G0, Extra, G1),
    pr(G1, D, L0, L).
pr(once(G), D, L0, L) :- !, once(pr(G, D, L0, L)).
pr(ignore(G), D, L0, L) :- !, ( pr(G, D, L0, L) -> true ; L0 = L ).
pr(forall(C, A), D, L0, L) :- !,
    copy_term(forall(C, A), Shown),
    findall((C, A)-CN, prove_list(C, D, CN), Sols),
    forall_actions(Sols, D, Subs),
    length(Sols, N),
    kept(Subs, Kept),
    L0 = [coll(forall, Shown, N, null, Kept)|L].
pr(findall(T, G, R), D, L0, L) :- !,
    copy_term(findall(T, G, R), Shown),
    findall(T-Ns, prove_list(G, D, Ns), Pairs),
    pairs_keys_values(Pairs, Ts, Subs),
    length(Ts, N), kept(Subs, Kept),
    R = Ts,
    L0 = [coll(findall, Shown, N, null, Kept)|L].
pr(findall(T, G, R, Tail), D, L0, L) :- !,
    findall(T-Ns, prove_list(G, D, Ns), Pairs),
    pairs_keys_values(Pairs, Ts, Subs),
    length(Ts, N), kept(Subs, Kept),
    append(Ts, Tail, R),
    L0 = [coll(findall, findall(T, G, R, Tail), N, null, Kept)|L].
pr(aggregate_all(Spec, G, R), D, L0, L) :- !,
    copy_term(aggregate_all(Spec, G, R), Shown),
    aggregate_template(Spec, Template, Spec2, X),
    findall(Template-Ns, prove_list(G, D, Ns), Pairs),
    pairs_keys_values(Pairs, Ts, Subs),
    aggregate_all(Spec2, member(X, Ts), R),
    length(Ts, N), kept(Subs, Kept),
    L0 = [coll(aggregate_all, Shown, N, R, Kept)|L].
pr(G, D, L0, L) :-
    ( G = bagof(T, Q, R), Kind = bagof ; G = setof(T, Q, R), Kind = setof ), !,
    copy_term(G, Shown),
    caret_inner(Q, Inner),
    wrap_carets(Q, prove_list(Inner, D, Ns), Goal),
    bagof(T-Ns, Goal, Pairs),
    pairs_keys_values(Pairs, Ts0, Subs),
    ( Kind == setof -> sort(Ts0, R) ; R = Ts0 ),
    length(Ts0, N), kept(Subs, Kept),
    L0 = [coll(Kind, Shown, N, null, Kept)|L].
pr(maplist(G, L1), D, L0, L) :- !, maplist_pr(G, [L1], D, L0, L).
pr(maplist(G, L1, L2), D, L0, L) :- !, maplist_pr(G, [L1, L2], D, L0, L).
pr(maplist(G, L1, L2, L3), D, L0, L) :- !, maplist_pr(G, [L1, L2, L3], D, L0, L).
pr(foldl(G, Xs, V0, V), D, L0, L) :- !, foldl_pr(Xs, G, V0, V, D, L0, L).
pr(catch(G, C, R), D, L0, L) :- !,
    catch(pr(G, D, L0, L), Ball, ( \+ own_ball(Ball), Ball = C, pr(R, D, L0, L) )).
pr(!, _, [cut|L], L) :- !.                % a cut inside a control construct: see docs
pr(halt, _, [halt|L], L) :- !, nb_setval(deonticbench_halted, true).
pr(halt(_), _, [halt|L], L) :- !, nb_setval(deonticbench_halted, true).
pr(G, _, L0, L) :- arith_goal(G), !, arith(G, L0, L).
pr(G, _, L0, L) :- comparison(G), !, compare_step(G, L0, L).
pr(G, D, L0, L) :- user_predicate(G), !, user_step(G, D, L0, L).
pr(G, _, L0, L) :- other_step(G, L0, L).

own_ball(time_limit_exceeded).

caret_inner(_^Q, Inner) :- !, caret_inner(Q, Inner).
caret_inner(Q, Q).
wrap_carets(V^Q, Call, V^W) :- !, wrap_carets(Q, Call, W).
wrap_carets(_, Call, Call).

extend_goal(M:G, Extra, M:G1) :- !, extend_goal(G, Extra, G1).
extend_goal(G, Extra, G1) :-
    G =.. List, append(List, Extra, List1), G1 =.. List1.

negation(G, D, L0, L) :-
    copy_term(G, Shown),
    consulted_mark(Seen),
    (   prove_list(G, D, _)
    ->  fail
    ;   failed_condition(G, Seen, CN),
        L0 = [naf(Shown, CN)|L]
    ).

%   When a condition fails, what can be seen of the failure: a comparison's values, and
%   the facts the failed attempt read (a failed search is no proof, but a conclusion
%   drawn from a failure rests on those facts being as they are).
failed_condition(C, Seen, Nodes) :-
    consulted_since(Seen, Tried),
    strip_module(C, _, C1),
    (   comparison(C1),
        catch(comparison_values(C1, Op, A, B), _, fail)
    ->  Nodes = [cmp(C1, Op, A, B, false)|Tried]
    ;   Nodes = Tried
    ).

note_consulted(Line, G) :- note_tried(Line-fact(G)).

%   Steps are noted as they happen, so that a failed attempt's facts, arithmetic and
%   comparisons can still be shown (assert survives the backtracking that undoes them).
note_tried(Item) :-
    flag(deonticbench_consulted, N, N + 1),
    (   N < 5000 -> copy_term(Item, C), assertz(consulted(N, C)) ; true ).

consulted_mark(N) :- flag(deonticbench_consulted, N, N).

%   The items noted since the mark, looked up by number (first-argument indexing), not
%   by scanning every item noted so far: a program with many failed conditions would
%   otherwise cost the square of its steps.
consulted_since(Seen, Tried) :-
    flag(deonticbench_consulted, Now, Now),
    Last is min(Now, 5000) - 1,
    findall(Item, ( between(Seen, Last, N), consulted(N, Item) ), Items0),
    list_to_set(Items0, Items),
    max_solutions_kept(K), K2 is K * 8,
    length(Items, Len),
    (   Len > K2 -> length(Kept, K2), append(Kept, _, Items) ; Kept = Items ),
    maplist(tried_node, Kept, Tried).

%   Every arithmetic step and comparison of the goal's attempts that failed anywhere
%   (not only under a condition): computation, though not proof.
failed_steps(Steps) :-
    findall(Item, ( consulted(_, Item), Item \= _-fact(_), Item \= _-fail_rule(_) ), Items0),
    list_to_set(Items0, Items),
    length(Items, Len),
    (   Len > 300 -> length(Kept, 300), append(Kept, _, Items) ; Kept = Items ),
    maplist(tried_node, Kept, Steps).

tried_node(Line-fact(F), tried(Line, F)).
tried_node(Line-fail_rule(G), fail_rule(Line, G)).
tried_node(_-arith(G, Ins, Out), tried_arith(G, Ins, Out)).
tried_node(_-cmp(G, Op, A, B, Ok), tried_cmp(G, Op, A, B, Ok)).

forall_actions([], _, []).
forall_actions([(_, A)-CN|Rest], D, [sol(CN2)|Subs]) :-
    (   prove_list(A, D, AN)
    ->  append(CN, AN, CN2)
    ;   fail
    ),
    forall_actions(Rest, D, Subs).

kept(Subs, Kept) :-
    max_solutions_kept(K),
    length(Subs, N),
    (   N =< K -> Kept0 = Subs
    ;   length(Kept0, K), append(Kept0, _, Subs)
    ),
    maplist(as_solution, Kept0, Kept).

as_solution(sol(X), sol(X)) :- !.
as_solution(X, sol(X)).

aggregate_template(count, true, count, _) :- !.
aggregate_template(count(T), T, count, _) :- !.
aggregate_template(Spec, T-W, Spec2, X-Y) :-
    compound(Spec), compound_name_arguments(Spec, F, [T, W]), !,
    compound_name_arguments(Spec2, F, [X, Y]).
aggregate_template(Spec, T, Spec2, X) :-
    compound(Spec), compound_name_arguments(Spec, F, [T]),
    compound_name_arguments(Spec2, F, [X]).

maplist_pr(G, Lists, D, L0, L) :-
    (   maplist(==([]), Lists) -> L0 = L
    ;   maplist(list_step, Lists, Heads, Tails),
        extend_goal(G, Heads, Call),
        pr(Call, D, L0, L1),
        maplist_pr(G, Tails, D, L1, L)
    ;   maplist(=([]), Lists), L0 = L
    ).

list_step([H|T], H, T).

foldl_pr([], _, V, V, _, L, L).
foldl_pr([X|Xs], G, V0, V, D, L0, L) :-
    extend_goal(G, [X, V0, V1], Call),
    pr(Call, D, L0, L1),
    foldl_pr(Xs, G, V1, V, D, L1, L).

%   Arithmetic: the evaluated expression's numbers and the result are recorded.
arith_goal(_ is _).
arith_goal(succ(_, _)).
arith_goal(plus(_, _, _)).

arith(G, L0, L) :-
    count_node,
    target_module(M),
    (   G = (_ is Expr) -> expression_numbers(Expr, Ins) ; expression_numbers(G, Ins) ),
    call(M:G),
    (   G = (Out is _) -> true ; G = succ(_, Out) -> true ; G = plus(_, _, Out) ),
    note_tried(null-arith(G, Ins, Out)),
    L0 = [arith(G, Ins, Out)|L].

%   The shape of an arithmetic step: its expression with every number written `#`
%   (`# * #`, `max(# - #, #)`), so that two steps of the same structure can be paired
%   whatever their numbers.
arith_shape(G, S) :-
    (   G = (_ is E) -> true ; G =.. [F|Args], append(In, [_], Args), E =.. [F|In] ),
    shape_term(E, T),
    term_text(T, S).

shape_term(E, '#') :- number(E), !.
shape_term(E, E) :- \+ compound(E), !.
shape_term(E, T) :-
    compound_name_arguments(E, F, Args),
    maplist(shape_term, Args, Args2),
    compound_name_arguments(T, F, Args2).

expression_numbers(E, Ns) :-
    findall(N, ( sub_term(N, E), number(N) ), Ns).

comparison(_ < _).
comparison(_ > _).
comparison(_ =< _).
comparison(_ >= _).
comparison(_ =:= _).
comparison(_ =\= _).

comparison_values(G, Op, A, B) :-
    G =.. [Op, X, Y],
    A is X, B is Y.

compare_step(G, L0, L) :-
    count_node,
    comparison_values(G, Op, A, B),
    C =.. [Op, A, B],
    (   call(C)
    ->  note_tried(null-cmp(G, Op, A, B, true)),   % kept should the attempt fail later
        L0 = [cmp(G, Op, A, B, true)|L]
    ;   note_tried(null-cmp(G, Op, A, B, false)),
        fail
    ).

%   Predicates the program itself defines (clauses in the target module).
user_predicate(G) :-
    target_module(M),
    callable(G),
    \+ predicate_property(M:G, imported_from(_)),
    (   predicate_property(M:G, number_of_clauses(_))
    ;   predicate_property(M:G, dynamic)
    ),
    \+ predicate_property(M:G, built_in).

user_step(G, D, L0, L) :-
    count_node,
    max_depth(MaxD),
    (   over_budget -> direct(G, budget, L0, L)
    ;   D >= MaxD -> direct(G, depth, L0, L)
    ;   D1 is D + 1,
        target_module(M),
        clause(M:G, Body, Ref),
        clause_line(Ref, Line),
        (   ( Body == fail ; Body == false )
        ->  note_tried(Line-fail_rule(G)),      % a decision hard-coded to fail
            fail
        ;   Body == true
        ->  L0 = [fact(Line, G)|L],
            note_consulted(Line, G)
        ;   split_at_cut(Body, Pre, Post)
        ->  pr(Pre, D1, Ns, Ns1), !, after_cut(Post, D1, Ns1, []),
            L0 = [rule(Line, G, Ns)|L]
        ;   pr(Body, D1, Ns, []),
            L0 = [rule(Line, G, Ns)|L]
        )
    ).

after_cut(Post, D, L0, L) :-
    (   split_at_cut(Post, Pre, Post2)
    ->  once(pr(Pre, D, L0, L1)), after_cut(Post2, D, L1, L)
    ;   pr(Post, D, L0, L)
    ).

split_at_cut(Body, Pre, Post) :-
    conj_list(Body, Goals),
    append(Before, [Cut|After], Goals), Cut == !, !,
    list_conj(Before, Pre),
    list_conj(After, Post).

conj_list(G, [G]) :- var(G), !.
conj_list((A, B), L) :- !, conj_list(A, LA), conj_list(B, LB), append(LA, LB, L).
conj_list(G, [G]).

list_conj([], true).
list_conj([G], G) :- !.
list_conj([G|Gs], (G, C)) :- list_conj(Gs, C).

clause_line(Ref, Line) :-
    (   clause_property(Ref, line_count(Line)) -> true ; Line = null ).

direct(G, Reason, L0, L) :-
    target_module(M),
    copy_term(G, Shown),
    call(M:G),
    L0 = [opaque(Shown, G, Reason)|L].

%   Everything else: built-ins and library predicates, run as they are.  A library
%   predicate that calls back into the program (meta-predicate) is opaque: its inner
%   proof is not seen.
other_step(G, L0, L) :-
    count_node,
    target_module(M),
    copy_term(G, Shown),
    (   meta_call(M:G)
    ->  Kind = opaque
    ;   Kind = builtin
    ),
    catch(call(M:G), E, undefined_or_rethrow(E, G)),
    (   Kind == opaque
    ->  L0 = [opaque(Shown, G, 'meta-call into the program')|L]
    ;   L0 = [builtin(G)|L]
    ).

undefined_or_rethrow(E, G) :-
    (   E = error(existence_error(procedure, PI0), _),
        strip_module(PI0, _, PI),
        functor(G, N, A), PI == N/A
    ->  nb_setval(deonticbench_undefined, N/A)
    ;   true
    ),
    throw(E).

meta_call(Goal) :-
    predicate_property(Goal, meta_predicate(Spec)),
    Spec =.. [_|Args],
    member(A, Args), ( integer(A) ; A == ^ ; A == // ), !.

count_node :-
    retract(node_count(N)), N1 is N + 1, assertz(node_count(N1)).

over_budget :-
    node_count(N), max_nodes(Max), N > Max.

%   --- proof -> JSON ------------------------------------------------------------

proof_json(Nodes, Json) :- maplist(node_json, Nodes, Json).

node_json(fact(Line, G), _{k: fact, l: Line, g: T, v: Vs}) :- !,
    term_text(G, T), fact_constants(G, Vs).
node_json(tried(Line, G), _{k: fact, tried: true, l: Line, g: T, v: Vs}) :- !,
    term_text(G, T), fact_constants(G, Vs).
node_json(fail_rule(Line, G), _{k: fail_rule, tried: true, l: Line, g: T}) :- !,
    term_text(G, T).
node_json(tried_arith(G, Ins, Out), J) :- !,
    node_json(arith(G, Ins, Out), J0), J = J0.put(tried, true).
node_json(tried_cmp(G, Op, A, B, Ok), J) :- !,
    node_json(cmp(G, Op, A, B, Ok), J0), J = J0.put(tried, true).
node_json(rule(Line, G, Ns), _{k: rule, l: Line, g: T, c: C}) :- !,
    term_text(G, T), proof_json(Ns, C).
node_json(arith(G, Ins, Out), _{k: arith, g: T, s: S, in: InsJ, out: OutJ}) :- !,
    term_text(G, T), maplist(json_value, Ins, InsJ), json_value(Out, OutJ),
    arith_shape(G, S).
node_json(cmp(G, Op, A, B, Ok), _{k: cmp, g: T, op: Op, args: [AJ, BJ], ok: Ok}) :- !,
    term_text(G, T), json_value(A, AJ), json_value(B, BJ).
node_json(ite(Branch, C, Ns), _{k: ite, branch: Branch, g: T, c: J}) :- !,
    term_text(C, T), proof_json(Ns, J).
node_json(or(Side), _{k: or, branch: Side}) :- !.
node_json(naf(G, Ns), _{k: naf, g: T, c: J}) :- !,
    term_text(G, T), proof_json(Ns, J).
node_json(coll(Kind, G, N, R, Subs), _{k: Kind, g: T, n: N, out: RJ, c: J}) :- !,
    term_text(G, T), json_value(R, RJ), maplist(solution_json, Subs, J).
node_json(builtin(G), _{k: builtin, g: T}) :- !, term_text(G, T).
node_json(opaque(_, G, Reason), _{k: opaque, g: T, reason: Reason}) :- !, term_text(G, T).
node_json(attempts(Ns), _{k: attempts, n: N, c: J}) :- !,
    length(Ns, N), proof_json(Ns, J).
node_json(cut, _{k: cut}) :- !.
node_json(halt, _{k: halt}) :- !.
node_json(X, _{k: unknown, g: T}) :- term_text(X, T).

solution_json(sol(Ns), _{k: solution, c: J}) :- proof_json(Ns, J).

%   The constants a fact states: its atomic arguments, at any depth; a fact without
%   arguments states its own name.
fact_constants(G, Vs) :-
    (   atom(G) -> Vs = [G]
    ;   findall(V, ( sub_term(X, G), X \== G, atomic(X), X \== [], json_value(X, V) ), Vs)
    ).

json_value(X, null) :- var(X), !.
json_value(X, X) :- integer(X), !.
json_value(X, X) :- float(X), X =:= X, X =\= inf, X =\= -inf, !.
json_value(X, S) :- number(X), !, format(string(S), "~w", [X]).
json_value(X, S) :- string(X), !, S = X.
json_value(X, S) :- atom(X), !, atom_string(X, S).
json_value(X, S) :- term_text(X, S).

term_text(T, S) :-
    copy_term(T, C),
    numbervars(C, 0, _, [singletons(true)]),
    catch(format(string(S), "~W",
                 [C, [quoted(true), numbervars(true), max_depth(12), portray(false)]]),
          _, S = "?").
