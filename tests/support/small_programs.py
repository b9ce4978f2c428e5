"""A handful of small programs for the analyser's tests: a tax computation, a findall
over fees, a call of an undefined predicate, a negation, and a syntax error."""

from __future__ import annotations

SMALL_PROGRAMS = [
    "income(alice, 50000).\nrate(0.2).\n"
    "tax(P, T) :- income(P, I), rate(R), T is I * R.\n"
    ":- tax(alice, T), format('Tax result: ~w~n', [T]).\n",
    "fee(bag, 30).\nfee(seat, 25).\n"
    "total(T) :- findall(F, fee(_, F), Fs), sum_list(Fs, T).\n"
    ":- total(T), format('Total cost: ~w~n', [T]).\n",
    "total(T) :- fee(F), T is F + 1.\n:- total(T), format('Total cost: ~w~n', [T]).\n",
    "eligible(bob) :- \\+ barred(bob).\nbarred(carol).\n"
    ":- ( eligible(bob) -> writeln('Label: yes') ; writeln('Label: no') ).\n",
    "broken(X :- .\n:- format('Total cost: 1~n').\n",
]
