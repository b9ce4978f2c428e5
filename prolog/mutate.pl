/*  Planted faults for validating the failure taxonomy (docs/analysis.md, "Validation").

    Reads a program with SWI-Prolog's reader, plants at most one fault at the level of
    terms, renames every predicate the program defines (consistently, everywhere it is
    called), reorders the predicates, and prints the result with portray_clause/1 (so
    comments and layout go too, as in a program a model wrote from scratch).

        mutate_main(+Text, +Fault, +Seed)
            Fault: none | number(K, New) | numbers([K-New, ...]) | operator(K)
                 | comparison(K, Op) | undefined(K) | constant(HeadText)
                 | negate(K) | drop(K) | sibling(I, J) | drop_clause(I)
                 | table(Name/Arity, ClausesText)
        mutate_list(+Text)
            prints JSON: the numbered places where a fault can be planted.

    Places are numbered in file order: the K-th numeric literal (with its context: fact,
    arith, cmp or other), the K-th arithmetic expression, the K-th call of a predicate the
    program defines, the K-th arithmetic comparison (`<`, `>`, `=<`, `>=`, `=:=`, `=\=`);
    clauses by their index I among the program's terms.

    The faults that replace which rule applies (wrong_rule): negate(K) negates the K-th
    call of a defined predicate (`p(X)` -> `\+ p(X)`, or drops the `\+` it stands under);
    drop(K) removes it from its conjunction; sibling(I, J) gives clause I the body of
    clause J of the same predicate (head variables shared by position); drop_clause(I)
    removes clause I; table(N/A, Text) replaces every clause of N/A by the clauses of Text
    (another case's rule table), where the first of them stood.
*/

:- module(deonticbench_mutate, [mutate_main/3, mutate_list/1, mutate_batch/3]).

:- use_module(library(http/json)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(random)).
:- use_module(library(pairs)).

read_program(Text, Terms) :-
    setup_call_cleanup(open_string(Text, In),
                       read_all(In, Terms),
                       close(In)).

read_all(In, Terms) :-
    catch(read_term(In, T, []), _, T = '$syntax_error'),
    (   T == end_of_file -> Terms = []
    ;   T == '$syntax_error' -> read_all(In, Terms)
    ;   Terms = [T|Rest], read_all(In, Rest)
    ).

%   The line each term starts on, in the order read_program/2 reads them (the lines the
%   analyser reports for the same text).
term_lines(Text, Lines) :-
    setup_call_cleanup(open_string(Text, In), read_lines(In, Lines), close(In)).

read_lines(In, Lines) :-
    catch(read_term(In, T, [term_position(P)]), _, T = '$syntax_error'),
    (   T == end_of_file -> Lines = []
    ;   T == '$syntax_error' -> read_lines(In, Lines)
    ;   stream_position_data(line_count, P, L), Lines = [L|Rest], read_lines(In, Rest)
    ).

clause_parts((:- D), directive, D, true) :- !.
clause_parts((H :- B), rule, H, B) :- !.
clause_parts(H, fact, H, true).

defined(Terms, Defined) :-
    findall(N/A, ( member(T, Terms), clause_parts(T, K, H, _), K \== directive,
                   callable(H), functor(H, N, A) ), D0),
    sort(D0, Defined).

%   --- numbered places -----------------------------------------------------------

%   numbers(+Term, +Context, -List): numeric literals in pre-order with their context.
numbers(T, _, []) :- var(T), !.
numbers(T, C, [C-T]) :- number(T), !.
numbers(T, _, []) :- \+ compound(T), !.
numbers(T, C, L) :-
    compound_name_arguments(T, F, Args),
    length(Args, N),
    arg_context(F, N, C, Cs),
    maplist(numbers, Args, Cs, Ls),
    append(Ls, L).

arg_context(is, 2, _, [other, arith]) :- !.
arg_context(F, 2, _, [cmp, cmp]) :- memberchk(F, [<, >, =<, >=, =:=, =\=]), !.
arg_context(_, N, C, Cs) :- length(Cs, N), maplist(=(C), Cs).

clause_numbers(T, L) :-
    clause_parts(T, Kind, H, B),
    (   Kind == fact -> numbers(H, fact, L)
    ;   Kind == rule -> numbers(H, other, L1), numbers(B, other, L2), append(L1, L2, L)
    ;   numbers(H, other, L)
    ).

comparison_ops([<, >, =<, >=, =:=, =\=]).

comparisons(T, L) :-
    comparison_ops(Ops),
    findall(_{op: Op, goal: S},
            ( sub_term(C, T), compound(C), compound_name_arity(C, Op, 2), memberchk(Op, Ops),
              text(C, S) ),
            L).

arith_exprs(T, L) :- findall(E, ( sub_term(S, T), nonvar(S), S = (_ is E), compound(E) ), L).

user_calls(Defined, T, L) :-
    clause_parts(T, _, _, B),
    findall(G, ( body_goal(B, G), callable(G), functor(G, N, A), memberchk(N/A, Defined) ), L).

body_goal(B, _) :- var(B), !, fail.
body_goal((A, B), G) :- !, ( body_goal(A, G) ; body_goal(B, G) ).
body_goal((A ; B), G) :- !, ( body_goal(A, G) ; body_goal(B, G) ).
body_goal((A -> B), G) :- !, ( body_goal(A, G) ; body_goal(B, G) ).
body_goal(\+ A, G) :- !, body_goal(A, G).
body_goal(G, G).

mutate_list(Text) :-
    read_program(Text, Terms),
    defined(Terms, Defined),
    findall(_{value: V, where: W, clause: I},
            ( nth0(I, Terms, T), clause_numbers(T, Ns), member(W-V, Ns) ), Nums0),
    number_list(Nums0, 0, Nums),
    findall(_{goal: S, clause: I},
            ( nth0(I, Terms, T), arith_exprs(T, Es), member(E, Es), text(E, S) ), Ops0),
    number_list(Ops0, 0, Ops),
    findall(_{name: N, arity: A, clause: I},
            ( nth0(I, Terms, T), user_calls(Defined, T, Gs), member(G, Gs), functor(G, N, A) ),
            Calls0),
    number_list(Calls0, 0, Calls),
    findall(D, ( nth0(I, Terms, T), comparisons(T, Cs), member(D0, Cs),
                 put_dict(clause, D0, I, D) ), Cmps0),
    number_list(Cmps0, 0, Cmps),
    term_lines(Text, Lines),
    findall(_{clause: I, name: N, arity: A, kind: Kind, line: L},
            ( nth0(I, Terms, T), clause_parts(T, Kind, H, _), Kind \== directive,
              callable(H), functor(H, N, A), ( nth0(I, Lines, L) -> true ; L = null ) ),
            Clauses),
    findall(_{name: N, arity: A, text: Src, numbers: Vs},
            ( member(N/A, Defined), predicate_table(Terms, N/A, Src, Vs) ),
            Tables),
    json_write_dict(current_output,
                    _{numbers: Nums, operators: Ops, calls: Calls, comparisons: Cmps,
                      clauses: Clauses, tables: Tables},
                    [width(0)]),
    nl.

%   A predicate whose clauses state numbers, as text (what another case's program can
%   take over whole) and its numbers in order.
predicate_table(Terms, N/A, Src, Vs) :-
    include(defines(N/A), Terms, Own),
    maplist(clause_numbers, Own, Ls), append(Ls, Pairs),
    pairs_values(Pairs, Vs), Vs \== [],
    with_output_to(string(Src), forall(member(T, Own), portray_clause(T))).

number_list([], _, []).
number_list([D|Ds], K, [D2|D2s]) :- D2 = D.put(k, K), K1 is K + 1, number_list(Ds, K1, D2s).

text(T, S) :- copy_term(T, C), numbervars(C, 0, _), format(string(S), "~W", [C, [quoted(true), numbervars(true)]]).

%   --- planting one fault ----------------------------------------------------------

plant(none, Terms, Terms, _).
plant(number(K, New), Terms0, Terms, _) :-
    nb_setval(mutate_counter, 0),
    maplist(replace_number_clause(K, New), Terms0, Terms).
plant(numbers(Pairs), Terms0, Terms, _) :-
    foldl([K-New, T0, T1]>>plant(number(K, New), T0, T1, _), Pairs, Terms0, Terms).
plant(comparison(K, Op), Terms0, Terms, _) :-
    nb_setval(mutate_counter, 0),
    maplist(swap_comparison(K, Op), Terms0, Terms).
plant(operator(K), Terms0, Terms, _) :-
    nb_setval(mutate_counter, 0),
    maplist(swap_operator(K), Terms0, Terms).
plant(undefined(K), Terms0, Terms, Defined) :-
    nb_setval(mutate_counter, 0),
    maplist(undefine_call(K, Defined), Terms0, Terms).
plant(constant(HeadText), Terms0, Terms, _) :-
    term_string(Head, HeadText),
    functor(Head, N, A),
    exclude(defines(N/A), Terms0, Rest),
    append(Rest, [Head], Terms).

plant(negate(K), Terms0, Terms, Defined) :-
    nb_setval(mutate_counter, 0),
    maplist(rewrite_call(K, Defined, negate), Terms0, Terms).
plant(drop(K), Terms0, Terms, Defined) :-
    nb_setval(mutate_counter, 0),
    maplist(rewrite_call(K, Defined, drop), Terms0, Terms).
plant(sibling(I, J), Terms0, Terms, _) :-
    nth0(I, Terms0, (H :- _)),
    nth0(J, Terms0, Donor),
    copy_term(Donor, (H2 :- B2)),
    functor(H, N, A), functor(H2, N, A),
    H =.. [_|Args], H2 =.. [_|Args2],
    maplist(share_variable, Args, Args2),
    replace_nth0(I, Terms0, (H :- B2), Terms).
plant(drop_clause(I), Terms0, Terms, _) :-
    nth0(I, Terms0, _, Terms).
plant(table(N/A, Text), Terms0, Terms, _) :-
    read_program(Text, New),
    nth0(First, Terms0, T0), defines(N/A, T0), !,
    length(Before, First), append(Before, After0, Terms0),
    exclude(defines(N/A), After0, After),
    append([Before, New, After], Terms).

%   The sibling's head variable in a position takes the clause's own (its body then
%   reads the clause's arguments); a constant of either head is left as it was.
share_variable(X, Y) :- ( var(X), var(Y) -> X = Y ; true ).

replace_nth0(I, List0, New, List) :-
    nth0(I, List0, _, Rest), nth0(I, List, New, Rest).

defines(N/A, T) :- clause_parts(T, K, H, _), K \== directive, callable(H), functor(H, N, A).

replace_number_clause(K, New, T0, T) :- replace_numbers(T0, K, New, T).

replace_numbers(T, _, _, T) :- var(T), !.
replace_numbers(T, K, New, T2) :-
    number(T), !,
    nb_getval(mutate_counter, C), C1 is C + 1, nb_setval(mutate_counter, C1),
    ( C =:= K -> T2 = New ; T2 = T ).
replace_numbers(T, _, _, T) :- \+ compound(T), !.
replace_numbers(T, K, New, T2) :-
    compound_name_arguments(T, F, Args),
    maplist([A0, A]>>replace_numbers(A0, K, New, A), Args, Args2),
    compound_name_arguments(T2, F, Args2).

swap_operator(_, T, T) :- var(T), !.
swap_operator(K, (X is E), (X is E2)) :- compound(E), !,
    nb_getval(mutate_counter, C), C1 is C + 1, nb_setval(mutate_counter, C1),
    ( C =:= K -> swapped(E, E2) ; E2 = E ).
swap_operator(_, T, T) :- \+ compound(T), !.
swap_operator(K, T, T2) :-
    compound_name_arguments(T, F, Args),
    maplist(swap_operator(K), Args, Args2),
    compound_name_arguments(T2, F, Args2).

%   The K-th comparison (in the pre-order of sub_term/2, as comparisons/2 lists them)
%   gets the operator Op, its two sides unchanged.
swap_comparison(_, _, T, T) :- var(T), !.
swap_comparison(_, _, T, T) :- \+ compound(T), !.
swap_comparison(K, Op, T, T2) :-
    compound_name_arguments(T, F, Args),
    (   Args = [_, _], comparison_ops(Ops), memberchk(F, Ops)
    ->  nb_getval(mutate_counter, C), C1 is C + 1, nb_setval(mutate_counter, C1),
        ( C =:= K -> F2 = Op ; F2 = F )
    ;   F2 = F
    ),
    maplist(swap_comparison(K, Op), Args, Args2),
    compound_name_arguments(T2, F2, Args2).

swapped(A + B, A - B) :- !.
swapped(A - B, A + B) :- !.
swapped(A * B, A + B) :- !.
swapped(A / B, A * B) :- !.
swapped(max(A, B), min(A, B)) :- !.
swapped(min(A, B), max(A, B)) :- !.
swapped(E, E * 2).

undefine_call(K, Defined, T0, T) :-
    clause_parts(T0, Kind, H, B0),
    (   Kind == directive -> T = T0
    ;   undefine_body(B0, K, Defined, B),
        ( Kind == fact -> T = T0 ; T = (H :- B) )
    ).

undefine_body(B, _, _, B) :- var(B), !.
undefine_body((A0, B0), K, D, (A, B)) :- !, undefine_body(A0, K, D, A), undefine_body(B0, K, D, B).
undefine_body((A0 ; B0), K, D, (A ; B)) :- !, undefine_body(A0, K, D, A), undefine_body(B0, K, D, B).
undefine_body((A0 -> B0), K, D, (A -> B)) :- !, undefine_body(A0, K, D, A), undefine_body(B0, K, D, B).
undefine_body(\+ A0, K, D, \+ A) :- !, undefine_body(A0, K, D, A).
undefine_body(G, K, D, G2) :-
    callable(G), functor(G, N, A), memberchk(N/A, D), !,
    nb_getval(mutate_counter, C), C1 is C + 1, nb_setval(mutate_counter, C1),
    (   C =:= K
    ->  G =.. [_|Args], atom_concat(N, '_helper_not_written', N2), G2 =.. [N2|Args]
    ;   G2 = G
    ).
undefine_body(G, _, _, G).

%   The K-th call of a defined predicate (numbered as undefine_body/4 and user_calls/3
%   number them; a negated call `\+ p` counts once, as its call) negated or dropped.
rewrite_call(K, Defined, How, T0, T) :-
    clause_parts(T0, Kind, H, B0),
    (   Kind == rule
    ->  rewrite_body(B0, K, Defined, How, B1),
        simplify_dropped(B1, B),
        T = (H :- B)
    ;   T = T0
    ).

rewrite_body(B, _, _, _, B) :- var(B), !.
rewrite_body((A0, B0), K, D, How, (A, B)) :- !,
    rewrite_body(A0, K, D, How, A), rewrite_body(B0, K, D, How, B).
rewrite_body((A0 ; B0), K, D, How, (A ; B)) :- !,
    rewrite_body(A0, K, D, How, A), rewrite_body(B0, K, D, How, B).
rewrite_body((A0 -> B0), K, D, How, (A -> B)) :- !,
    rewrite_body(A0, K, D, How, A), rewrite_body(B0, K, D, How, B).
rewrite_body(\+ G, K, D, How, G2) :-
    defined_call(G, D), !,
    (   next_place(K)
    ->  ( How == negate -> G2 = G ; G2 = '$dropped' )
    ;   G2 = (\+ G)
    ).
rewrite_body(\+ A0, K, D, How, \+ A) :- !, rewrite_body(A0, K, D, How, A).
rewrite_body(G, K, D, How, G2) :-
    defined_call(G, D), !,
    (   next_place(K)
    ->  ( How == negate -> G2 = (\+ G) ; G2 = '$dropped' )
    ;   G2 = G
    ).
rewrite_body(G, _, _, _, G).

defined_call(G, Defined) :- callable(G), functor(G, N, A), memberchk(N/A, Defined).

%   Count one place; true when it is the K-th.
next_place(K) :-
    nb_getval(mutate_counter, C), C1 is C + 1, nb_setval(mutate_counter, C1),
    C =:= K.

%   A dropped goal leaves its conjunction; where it was a whole branch it becomes true.
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

%   --- renaming and reordering -------------------------------------------------------

%   Every defined predicate gets a name of its own ('r<i>_<letters>'); main/0 keeps its
%   name (it is the protocol's entrypoint).  A term is renamed wherever its name/arity is
%   a defined predicate, and an atom or a closure wherever it names one for the calls of
%   maplist/foldl/include/exclude/call (up to three extra arguments).
renaming(Defined, Seed, Map) :-
    set_random(seed(Seed)),
    findall(N/A-New,
            ( nth1(I, Defined, N/A), N/A \== main/0,
              random_between(0, 25, R), C is 0'a + R, atom_codes(L, [C, C]),
              format(atom(New), 'r~w_~w', [I, L]) ),
            Map).

rename(T, _, T) :- var(T), !.
rename(T, _, T) :- number(T), !.
rename(T, _, T) :- string(T), !.
rename(T, _, T) :- T == [], !.
rename(T, Map, T2) :-
    atom(T), !,
    (   member(T/_-New, Map) -> T2 = New ; T2 = T ).
rename(T, Map, T2) :-
    compound_name_arguments(T, F, Args),
    length(Args, A),
    maplist([X, Y]>>rename(X, Map, Y), Args, Args2),
    (   member(F/A2-New, Map), A2 >= A, A2 =< A + 3 -> F2 = New ; F2 = F ),
    compound_name_arguments(T2, F2, Args2).

reorder(Terms, Seed, Ordered) :-
    partition([T]>>(T = (:- _)), Terms, Directives, Clauses),
    findall(Key-T, ( member(T, Clauses), clause_parts(T, _, H, _), functor(H, N, A), Key = N/A ), Keyed),
    pairs_keys(Keyed, Keys0), list_to_set(Keys0, Keys),
    set_random(seed(Seed)),
    random_permutation(Keys, Shuffled),
    findall(Group,
            ( member(K, Shuffled), findall(T, member(K-T, Keyed), Own),
              shuffled_clauses(Own, Group) ),
            Groups),
    append(Groups, Grouped),
    append(Grouped, Directives, Ordered).

%   A predicate's clauses are shuffled too when their order cannot change what it
%   means: no cut in any of them and no two heads that unify (a call reaches one
%   clause at most, whatever the order).
shuffled_clauses(Clauses, Shuffled) :-
    (   order_free(Clauses)
    ->  random_permutation(Clauses, Shuffled)
    ;   Shuffled = Clauses
    ).

order_free(Clauses) :-
    \+ ( member(C, Clauses), clause_parts(C, _, _, B), sub_term(X, B), X == ! ),
    \+ ( append(_, [C1|Rest], Clauses), member(C2, Rest),
          clause_parts(C1, _, H1, _), clause_parts(C2, _, H2, _),
          \+ H1 \= H2 ).

mutate_main(Text, Fault, Seed) :-
    read_program(Text, Terms0),
    defined(Terms0, Defined),
    plant(Fault, Terms0, Terms1, Defined),
    renaming(Defined, Seed, Map),
    maplist([T, R]>>rename(T, Map, R), Terms1, Terms2),
    reorder(Terms2, Seed, Terms),
    forall(member(T, Terms), portray_clause(T)).

%!  mutate_batch(+Text, +Faults, +Seed)
%   One JSON line per fault: {"i": Index, "program": Text} (or "error").
mutate_batch(Text, Faults, Seed) :-
    forall(nth0(I, Faults, Fault),
           (   mutate_one(I, Text, Fault, Seed), nl )).

mutate_one(I, Text, Fault, Seed) :-
           (   catch(with_output_to(string(Out), mutate_main(Text, Fault, Seed)), E, true)
           ->  (   var(E)
               ->  json_write_dict(current_output, _{i: I, program: Out}, [width(0)])
               ;   message_to_codes(E, Codes), string_codes(S, Codes),
                   json_write_dict(current_output, _{i: I, error: S}, [width(0)])
               )
           ;   json_write_dict(current_output, _{i: I, error: "failed"}, [width(0)])
           ).

message_to_codes(E, Codes) :-
    catch(( '$messages':translate_message(E, Lines, []),
            with_output_to(codes(Codes), print_message_lines(current_output, '', Lines)) ),
          _, format(codes(Codes), "~q", [E])).
