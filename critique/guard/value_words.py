"""Values written in words, as readings of ``critique.guard.values``: number words in seven languages
(``text2num``) and in Russian, Ukrainian and Arabic (``num2words``), digit words read one by
one, NATO spelling, and runs whose spelled words decode to a code (``a n y a_five-nine`` →
``anya59``, ``quatreG`` → ``4g``).
"""

from __future__ import annotations

import re

from critique.guard import number_words as nw
from critique.guard.value_types import Reading, TextValues, gap, word_zipf


def number_word_readings(tv: TextValues) -> None:
    toks = tv.tokens
    s = tv.canon.text
    i = 0
    while i < len(toks):
        langs = _languages(toks[i].text)
        if not langs:
            i += 1
            continue
        best: tuple[int, list[float], str] | None = None
        for lang in langs:
            j = i
            while j + 1 < len(toks) and len(gap(s, toks[j], toks[j + 1]).strip(" -,")) == 0:
                nxt = toks[j + 1].text.lower()
                if lang in _languages(nxt) or nxt in nw.DECIMAL_MARKS:
                    j += 1
                elif nxt in nw.JOINERS and j + 2 < len(toks) and lang in _languages(toks[j + 2].text):
                    j += 2
                else:
                    break
            while toks[j].text.lower() in nw.DECIMAL_MARKS | nw.JOINERS and j > i:
                j -= 1
            if lang not in ("en", SCRIPT) and j == i and nw.english_lookalike(toks[i].text):
                continue
            values = _phrase(tv, i, j, lang)
            if values and (best is None or j > best[0]):
                best = (j, values, lang)
        if best is None:
            i += 1
            continue
        j, values, _ = best
        digits_one_by_one = len(values) >= 2 and all(v < 10 and v.is_integer() for v in values)
        if digits_one_by_one:
            code = "".join(str(int(v)) for v in values)
            words = [k for k in range(i, j + 1) if toks[k].lower not in nw.JOINERS or nw.digit_word(toks[k].text)]
            if len(words) == len(values):  # 'un zéro zéro un': each word its digit, look-alikes too
                tv.decoded.update({k: str(int(v)) for k, v in zip(words, values)})
            tv.readings.append(Reading(i, j, "code", code))
            tv.readings.append(Reading(i, j, "number", float(code)))
        if len(values) == 1:
            tv.readings.append(Reading(i, j, "number", values[0]))
        elif not digits_one_by_one:  # 'cento e cinquenta e quatro e dezassete': 154 and 17, or 154.17
            tv.readings.append(Reading(i, j, "numbers", tuple(values)))
            if len(values) == 2 and values[1] < 100 and values[1].is_integer():
                tv.readings.append(Reading(i, j, "number", values[0] + values[1] / 100))
        if digits_one_by_one or any(v >= 10 or not v.is_integer() for v in values):
            tv.value_like.update(range(i, j + 1))
            stretch = (i, j)
            if digits_one_by_one:  # glued to the code it ends ('HAT trois zéro zéro')
                run = tv.run_of(i)
                stretch = (min(run[0], i), max(run[1], j))
            for k in range(i, j + 1):
                tv.spelled.setdefault(k, stretch)
        i = j + 1


SCRIPT = "script"
"""The pseudo-language of number words in other scripts (``critique.guard.number_words.SPACED_SCRIPTS``)."""


def _languages(word: str) -> tuple[str, ...]:
    if not word.isalpha():
        return ()
    scripted = (SCRIPT,) if word.lower() in nw.script_number_words() else ()
    return nw.number_word_languages(word) + scripted


def _phrase(tv: TextValues, i: int, j: int, lang: str) -> list[float] | None:
    words = [t.text for t in tv.tokens[i:j + 1]]
    if lang == SCRIPT:
        return nw.script_phrase_value(words)
    lowered = [w.lower() for w in words]
    marks = [k for k, w in enumerate(lowered) if w in nw.DECIMAL_MARKS]
    if marks:
        at = marks[0]
        whole = nw.phrase_value(words[:at], lang)
        fraction = nw.phrase_value(words[at + 1:], lang)
        if whole and len(whole) == 1 and fraction and all(f < 10 for f in fraction):
            return [float(f"{int(whole[0])}." + "".join(str(int(f)) for f in fraction))]
        return None
    return nw.phrase_value(words, lang)


def nato_readings(tv: TextValues) -> None:
    toks = tv.tokens
    i = 0
    while i < len(toks):
        j = i
        letters = []
        while j < len(toks):
            w = toks[j].lower
            if j > i and not re.fullmatch(r"[ \t,.\-/]{1,3}", gap(tv.canon.text, toks[j - 1], toks[j])):
                break
            if w in nw.NATO:
                letters.append(nw.NATO[w])
            elif w in nw.SPOKEN_SEPARATORS and j > i:
                letters.append("")
            elif w.isdigit() and len(w) <= 2:
                letters.append(w)
            elif nw.word_value(w, "en") is not None and nw.word_value(w, "en") < 10:
                letters.append(str(int(nw.word_value(w, "en"))))
            else:
                break
            j += 1
        nato = sum(1 for t in toks[i:j] if t.lower in nw.NATO)
        if j - i >= 3 and (nato >= 2 or toks[i].lower in nw.NATO):  # 'Lima One Zero Zero Two' 
            tv.readings.append(Reading(i, j - 1, "code", "".join(letters)))
            tv.decoded.update({k: letters[k - i] for k in range(i, j)})
            tv.value_like.update(range(i, j))
            for k in range(i, j):
                tv.spelled[k] = (i, j - 1)
            i = j
        else:
            i += 1


def decoded_runs(tv: TextValues) -> None:
    """``a n y a_g a r c i a_five-nine-zero-one`` → ``anyagarcia5901``: a run's key with its
    spelled words read as the characters they spell (and ``quatreG`` as ``4g``)."""
    for tok in tv.tokens:
        if tok.index not in tv.decoded and word_zipf(tok.text) < 3.0:
            glued = nw.number_prefix(tok.text)
            if glued is not None:
                tv.decoded[tok.index] = glued
                tv.readings.append(Reading(tok.index, tok.index, "code", glued))
                tv.value_like.add(tok.index)
    if not tv.decoded:
        return
    for first, last in tv.runs:
        if not any(k in tv.decoded for k in range(first, last + 1)):
            continue
        for i in range(first, last + 1):
            for j in range(i, min(last, i + 24) + 1):
                if any(k in tv.decoded for k in range(i, j + 1)):
                    key = "".join(tv.decoded.get(k, tv.tokens[k].lower) for k in range(i, j + 1))
                    tv.readings.append(Reading(i, j, "code", key))
