/*  read_program.pl: is a text a Prolog program?  Decided by SWI-Prolog's own reader.

    Reads standard input term by term with read_term/3 and prints one line:

        program N        every term read; N of them are rules, directives or compound
                         facts (a text of bare atoms is not taken for a program)
        not_program R    the reader stopped: R is syntax_error(Message) or variable_term
                         (a term that is a variable, such as "Yes.", is no clause)

    Nothing in the text is run (quasi-quotations, whose parser would run while reading,
    are switched off).  Two kinds of directive change how the rest is read, so
    they are honoured: op/3, and use_module/1 of the constraint libraries that define
    operators (clpfd, clpb, clpr, clpq, chr), which are loaded from SWI's own library.
    Used by deonticbench.programs to recognise a program without a ```prolog fence.
*/

:- initialization(main, main).

main :-
    % Quasi-quotations would call a parser while reading: this script only reads.
    set_prolog_flag(quasi_quotations, false),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    catch(read_terms(user_input, 0, N), Error, true),
    (   var(Error)
    ->  format("program ~d~n", [N])
    ;   Error = error(syntax_error(Message), _)
    ->  format("not_program syntax_error(~q)~n", [Message])
    ;   Error = variable_term
    ->  format("not_program variable_term~n")
    ;   format("not_program ~q~n", [Error])
    ).

read_terms(Stream, Seen, Count) :-
    read_term(Stream, Term, [module(read_program_text), syntax_errors(error)]),
    (   Term == end_of_file
    ->  Count = Seen
    ;   var(Term)
    ->  throw(variable_term)
    ;   honour_syntax_directive(Term),
        (   structured(Term) -> Next is Seen + 1 ; Next = Seen ),
        read_terms(Stream, Next, Count)
    ).

structured((_ :- _)).
structured((:- _)).
structured((_ --> _)).
structured(Term) :- compound(Term).

honour_syntax_directive((:- Directive)) :-
    !,
    syntax_directive(Directive).
honour_syntax_directive(_).

syntax_directive(op(P, T, N)) :-
    !,
    catch(read_program_text:op(P, T, N), _, true).
syntax_directive(use_module(library(Lib))) :-
    operator_library(Lib),
    !,
    catch(read_program_text:use_module(library(Lib)), _, true).
syntax_directive(use_module(library(Lib), _)) :-
    operator_library(Lib),
    !,
    catch(read_program_text:use_module(library(Lib)), _, true).
syntax_directive((A, B)) :-
    !,
    syntax_directive(A),
    syntax_directive(B).
syntax_directive(_).

operator_library(clpfd).
operator_library(clpb).
operator_library(clpr).
operator_library(clpq).
operator_library(chr).
