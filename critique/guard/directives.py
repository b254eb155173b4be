"""What a critique tells the plan to read is no statement of what it will find.

"Promise no refund without reading the fare and insurance first", "verify the cabin", "look up
the order's status": the record's field is the object of a verb of reading or finding out, so
the clause names what to learn, not its value. ``inquiries`` returns the spans of such objects:
from the verb to where its object ends — the next finite verb, a subordinating word, or the
clause's end — so that "the booking has no insurance" beside it is still read as a claim. The
verbs are one semantic class (reading, checking, finding out), written out for the languages
the guard reads.
"""

from __future__ import annotations

import re

_VERBS = (
    r"read|reads|reading|re-?read|check|checks|checking|checked|verify|verifies|verifying|confirm|confirms|"
    r"confirming|look(?:s|ing)?\s+(?:up|at|into|over)|pull(?:s|ing)?\s+up|review|reviews|reviewing|inspect|"
    r"inspects|inspecting|examine|examines|examining|consult|consults|consulting|fetch|fetches|fetching|"
    r"retrieve|retrieves|retrieving|open|opens|opening|see|seeing|find\s+out|finding\s+out|ask(?:s|ing)?\s+(?:about|for)|"
    r"establish|establishing|determine|determining|"
    r"leer|leyendo|revisar|revisa|comprobar|comprueba|verificar|verifica|consultar|consulta|"  # es, pt
    r"lesen|liest|prüfen|prüft|überprüfen|nachsehen|nachschlagen|"                           # de
    r"lire|lis|lisez|vérifier|vérifie|vérifiez|consulter|consultez|"                          # fr
    r"leggere|leggi|verificare|controllare|controlla|"                                         # it
    r"ler|conferir|checar|"                                                                    # pt
    r"lezen|lees|controleren|controleer|nakijken")                                             # nl
_INQUIRY = re.compile(rf"\b(?:{_VERBS})\b", re.I)
_OBJECT_END = re.compile(
    r"\b(?:is|are|was|were|has|have|had|isn't|aren't|wasn't|hasn't|haven't|does|did|doesn't|didn't|"
    r"will|would|can|cannot|must|should|shows?|showed|says?|said|turns?\s+out|"
    r"that|which|who|because|since|so|but|although|though|while|whereas|as|and\s+(?:it|they|the\s+\w+\s+(?:is|are|has))|"
    r"es|está|son|tiene|ist|sind|hat|haben|est|sont|ont|è|sono|ha|hanno|é|são|tem|heeft|zijn)\b"
    r"|[,;:.!?\n—–]", re.I)
"""Where the object of an inquiry ends: a finite verb or a subordinating word (the clause goes on
to say something), or punctuation."""


def inquiries(clause: str) -> list[tuple[int, int]]:
    """Spans of ``clause`` that are the object of a verb of reading or finding out."""
    out = []
    for m in _INQUIRY.finditer(clause):
        end = _OBJECT_END.search(clause, m.end())
        out.append((m.start(), end.start() if end else len(clause)))
    return out


def inside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a <= start and end <= b for a, b in spans)
