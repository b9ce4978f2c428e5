/*  label_directives.pl: where are upstream's "Label:" directives in a program?
    Decided by SWI-Prolog's own reader.

    Upstream injected the gold label into reference programs as directives that print it,
    in several shapes: `:- format("~w~n", ["Label: 1166"]).`, a directive over two lines,
    `writeln/print/write` variants, `format/3` to a stream.  A directive whose goal holds
    an atom or string containing `Label:` is one of them (its output holds the label).

    A long-lived server, so that preparing many programs costs one start of swipl:
    standard input carries requests, each a line with the program's length in characters
    followed by the program's text; for each, standard output gets one line per label
    directive, `remove From To` (character offsets of the directive, from its `:-` to
    after its full stop), then `done`.  Nothing in a program is run: terms are only read
    (quasi-quotations switched off; syntax errors skipped, as the loader would).
*/

:- initialization(main, main).

main :-
    set_prolog_flag(quasi_quotations, false),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    serve.

serve :-
    read_line_to_string(user_input, Line),
    (   Line == end_of_file
    ->  true
    ;   number_string(Length, Line),
        read_string(user_input, Length, Text),
        catch(report(Text), _, true),
        format("done~n"),
        flush_output,
        serve
    ).

report(Text) :-
    setup_call_cleanup(open_string(Text, In), scan(In), close(In)).

scan(In) :-
    (   catch(read_term(In, Term, [ subterm_positions(Pos),
                                    syntax_errors(quiet),
                                    module(label_directives_text) ]),
              _, fail)
    ->  true
    ;   Term = '$skip'                      % a syntax error: the reader resumes after it
    ),
    (   Term == end_of_file
    ->  true
    ;   Term == '$skip', at_end_of_stream(In)
    ->  true
    ;   (   nonvar(Term), Term = (:- Goal), nonvar(Pos), label_goal(Goal)
        ->  arg(1, Pos, From),
            stream_property(In, position(After)),
            stream_position_data(char_count, After, To),
            format("remove ~d ~d~n", [From, To])
        ;   true
        ),
        scan(In)
    ).

label_goal(Goal) :-
    sub_term(X, Goal),
    (   atom(X) -> sub_atom(X, _, _, _, 'Label:')
    ;   string(X) -> sub_string(X, _, _, _, "Label:")
    ),
    !.
