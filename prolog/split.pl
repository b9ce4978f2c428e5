/*  split.pl: what each clause of a program is, for the rule/fact split (docs/settings.md).

    Reads a JSON list of program texts on standard input and prints one JSON object per
    program, in order:

        {"index": I, "clauses": [C, ...], "query": ["main/0", ...], "answer": ["tax/3", ...],
         "used": ["tax/3", "income/3", ...]}
        {"index": I, "error": "syntax_error(...)"}

    Each clause C is {"start": S, "end": E, "kind": K, "pred": "name/arity",
    "ground_fact": Bool, "constants": [...]}: S and E are character offsets of the term in
    the text (E is just past its full stop), K is "clause", "declaration" (dynamic/1,
    use_module/1, op/3 and the like) or "goal" (a directive that runs something), and
    "constants" are the atoms, strings and numbers among a ground fact's arguments (for a
    fact of arity 0, its name).

    "query" lists the predicates that print the answer: main/0, and each predicate that
    main/0 or a goal directive calls which prints itself (format/1,2,3, write/1,
    writeln/1, print/1) and is called by nothing outside the query (upstream's uscis
    run/0 and its handle_undefined/1).  "answer" lists the predicates the query calls
    that are not in it: the conclusion the query prints.  "used" lists the predicates the
    program defines that the answer predicates reach, directly or through others (what
    the query's answer rests on; distractor statutes read it, docs/settings.md).

    Reading is SWI-Prolog's own reader (read_term/3 with subterm_positions) and
    library(prolog_xref) for who calls whom; nothing in a program is run.  The op/3
    directives and the constraint libraries that define operators are honoured while
    reading, as in read_program.pl.
*/

:- use_module(library(prolog_xref)).
:- use_module(library(http/json)).
:- use_module(library(lists)).
:- use_module(library(apply)).

:- initialization(main, main).

main :-
    set_prolog_flag(quasi_quotations, false),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    json_read_dict(user_input, Texts, [value_string_as(string)]),
    forall(nth0(I, Texts, Text), split_one(I, Text)).

split_one(I, Text) :-
    format(atom(Module), 'deonticbench_split_~w', [I]),
    catch(( read_clauses(Text, Module, Clauses),
            query_predicates(Text, Clauses, Query, Answer, Used),
            Report = _{index: I, clauses: Clauses, query: Query, answer: Answer, used: Used} ),
          Error,
          ( format(string(Why), "~q", [Error]),
            Report = _{index: I, error: Why} )),
    % One line per program: layout breaks are never inside a JSON string (escaped there).
    with_output_to(string(Json), json_write_dict(current_output, Report, [width(0)])),
    split_string(Json, "\n", "", Pieces),
    atomic_list_concat(Pieces, ' ', Line),
    format("~w~n", [Line]).

% --- reading ------------------------------------------------------------------------

read_clauses(Text, Module, Clauses) :-
    setup_call_cleanup(
        open_string(Text, Stream),
        read_all(Stream, Module, Clauses),
        close(Stream)).

read_all(Stream, Module, Clauses) :-
    read_term(Stream, Term, [ module(Module), subterm_positions(Pos),
                              syntax_errors(error) ]),
    (   Term == end_of_file
    ->  Clauses = []
    ;   arg(1, Pos, Start),
        stream_property(Stream, position(P)),
        stream_position_data(char_count, P, End),
        honour_syntax_directive(Module, Term),
        describe(Term, Start, End, Clause),
        Clauses = [Clause|Rest],
        read_all(Stream, Module, Rest)
    ).

describe((:- Directive), Start, End,
         _{start: Start, end: End, kind: Kind, pred: "", ground_fact: false, constants: []}) :-
    !,
    (   declaration(Directive) -> Kind = declaration ; Kind = goal ).
describe((?- Goal), Start, End, Clause) :-
    !,
    describe((:- Goal), Start, End, Clause).
describe(Term, Start, End,
         _{start: Start, end: End, kind: clause, pred: PI, ground_fact: Ground,
           constants: Constants}) :-
    clause_head(Term, Head, Body),
    (   callable(Head)
    ->  functor(Head, Name, Arity),
        format(string(PI), "~w/~w", [Name, Arity])
    ;   PI = ""
    ),
    (   Body == true, ground(Head), callable(Head)
    ->  Ground = true,
        head_constants(Head, Constants)
    ;   Ground = false,
        Constants = []
    ).

clause_head((Head :- Body), Head, Body) :- !.
clause_head((Head --> _), Head, dcg) :- !.
clause_head(Head, Head, true).

head_constants(Head, Constants) :-
    compound(Head),
    !,
    Head =.. [_|Args],
    foldl(term_constants, Args, [], Reversed),
    reverse(Reversed, Constants).
head_constants(Head, [Name]) :-
    atom_string(Head, Name).

term_constants(T, Acc, [S|Acc]) :-
    ( atom(T) ; string(T) ; number(T) ),
    T \== [],
    !,
    format(string(S), "~w", [T]).
term_constants(T, Acc, Out) :-
    compound(T),
    !,
    T =.. [_|Args],
    foldl(term_constants, Args, Acc, Out).
term_constants(_, Acc, Acc).

% Directives that declare rather than run: they belong with the rules.
declaration(Goal) :-
    callable(Goal),
    functor(Goal, Name, _),
    memberchk(Name, [ dynamic, discontiguous, multifile, module, use_module,
                      ensure_loaded, set_prolog_flag, op, table, encoding,
                      style_check, license, meta_predicate, consult, include ]),
    !.
declaration((A, B)) :-
    declaration(A),
    declaration(B).

honour_syntax_directive(Module, (:- op(P, T, N))) :-
    !,
    catch(Module:op(P, T, N), _, true).
honour_syntax_directive(Module, (:- use_module(library(Lib)))) :-
    memberchk(Lib, [clpfd, clpb, clpr, clpq, chr]),
    !,
    catch(Module:use_module(library(Lib)), _, true).
honour_syntax_directive(_, _).

% --- who prints the answer -----------------------------------------------------------

query_predicates(Text, Clauses, Query, Answer, Used) :-
    % library(prolog_xref) reads a file: the text goes to a private temporary one.
    tmp_file_stream(text, Src, Out),
    set_stream(Out, encoding(utf8)),
    write(Out, Text),
    close(Out),
    catch(xref_source(Src, [silent(true), register_called(all)]), _, true),
    % The roots: main/0 when the program defines it, and every goal directive.
    (   member(C, Clauses), get_dict(pred, C, "main/0") -> Roots = ['<directive>'/1, main/0]
    ;   Roots = ['<directive>'/1]
    ),
    grow_query(Src, Roots, QueryPIs),
    findall(PI,
            ( member(Caller, QueryPIs), calls(Src, Caller, PI),
              \+ memberchk(PI, QueryPIs), defined(Src, PI) ),
            AnswerPIs0),
    sort(AnswerPIs0, AnswerPIs),
    include(defined(Src), QueryPIs, Defined),
    maplist(pi_string, Defined, Query),
    maplist(pi_string, AnswerPIs, Answer),
    reach(Src, AnswerPIs, AnswerPIs, UsedPIs),
    maplist(pi_string, UsedPIs, Used),
    xref_clean(Src),
    delete_file(Src).

grow_query(Src, Query0, Query) :-
    findall(PI,
            ( member(Caller, Query0), calls(Src, Caller, PI),
              \+ memberchk(PI, Query0), defined(Src, PI), prints(Src, PI),
              forall(calls(Src, Other, PI), memberchk(Other, Query0)) ),
            New0),
    sort(New0, New),
    (   New == []
    ->  Query = Query0
    ;   append(Query0, New, Query1),
        grow_query(Src, Query1, Query)
    ).

% reach(+Src, +Frontier, +Seen, -All): the defined predicates Seen and Frontier call,
% transitively.
reach(_, [], Seen, Seen) :- !.
reach(Src, Frontier, Seen, All) :-
    findall(PI,
            ( member(Caller, Frontier), calls(Src, Caller, PI),
              \+ memberchk(PI, Seen), defined(Src, PI) ),
            New0),
    sort(New0, New),
    append(Seen, New, Seen1),
    reach(Src, New, Seen1, All).

calls(Src, CN/CA, N/A) :-
    xref_called(Src, Head, By),
    callable(By),
    functor(By, CN, CA),
    functor(Head, N, A).

defined(Src, N/A) :-
    functor(Head, N, A),
    xref_defined(Src, Head, How),
    How \= imported(_),
    !.

prints(Src, PI) :-
    member(Printer, [format/1, format/2, format/3, write/1, writeln/1, print/1]),
    calls(Src, PI, Printer),
    !.

pi_string(N/A, S) :-
    format(string(S), "~w/~w", [N, A]).
