"""A person-neutral form of a text, so that what the user said is recognised in any person.

The opening request speaks in the first person ("my upcoming outgoing flight"), a critique of
the plan in the second or the third ("your …", "their …", "the user's …"). Whether a phrase of
the critique was already public is asked of both texts in this form: every personal pronoun,
possessive and the nouns a critique uses for the user stand for one placeholder, and the
person's agreement of the verb is dropped (*be*, *have*, *do*, an English
third-person *-s*). The word classes are closed (pronouns
and possessive determiners), written out here for each language the guard reads: English,
Spanish, German, French, Italian, Portuguese, Dutch and Chinese. Articles that share a
pronoun's spelling (Spanish and French *la*, *le*, *les*) are left alone.
"""

from __future__ import annotations

import functools
import re

PERSON = "⟨p⟩"
_WORDS = {
    "en": "i me my mine myself you your yours yourself yourselves he him his himself she her hers herself "
          "they them their theirs themselves we us our ours ourselves",
    "es": "yo mí mi mis tú tu tus él ella ellos ellas usted ustedes su sus suyo suya suyos suyas nosotros "
          "nosotras nuestro nuestra nuestros nuestras vosotros vuestro vuestra vuestros vuestras me te se nos os",
    "de": "ich mich mir du dich dir er ihn ihm sie ihnen wir uns ihr euch mein meine meinen meinem meiner "
          "meines dein deine deinen deinem deiner deines sein seine seinen seinem seiner seines ihre ihren "
          "ihrem ihrer ihres unser unsere unseren unserem unserer euer eure euren eurem eurer",
    "fr": "je j' moi tu toi il elle ils elles nous vous m' t' s' mon ma mes ton ta tes son sa ses notre nos "
          "votre vos leur leurs lui",
    "it": "io tu lui lei noi voi loro mio mia miei mie tuo tua tuoi tue suo sua suoi sue nostro nostra "
          "nostri nostre vostro vostra vostri vostre",
    "pt": "eu tu ele ela nós vós eles elas você vocês meu minha meus minhas teu tua teus tuas seu sua seus "
          "suas nosso nossa nossos nossas dele dela deles delas",
    "nl": "ik jij je u hij zij ze wij we jullie mijn jouw jou haar hun hen ons onze uw",
}
"""Personal pronouns and possessive determiners, by language."""
USER_NOUNS = ("user", "customer", "caller", "client", "traveller", "traveler", "passenger")
_USER = rf"(?:the|this|that|our)\s+(?:{'|'.join(USER_NOUNS)}|account\s+holder)(?:'s|s')?"
"""What a critique calls the person who opened the conversation."""
_AGREEMENT = {"am": "be", "is": "be", "are": "be", "'m": "be", "'re": "be", "was": "was", "were": "was",
              "has": "have", "have": "have", "'ve": "have", "does": "do", "do": "do"}
_ZH = re.compile(r"我们|你们|您们|他们|她们|它们|咱们|我|你|您|他|她")
_TOKEN = re.compile(PERSON + r"|\b" + _USER + r"\b|[\u3400-\u9fff]|[^\W\d_]+'?|'(?:m|re|ve|s)\b|\S", re.I)
"""A placeholder, a noun for the user, one Chinese character, a word, a clitic or a sign."""


@functools.lru_cache(maxsize=None)
def _lexicon() -> frozenset[str]:
    return frozenset(w for words in _WORDS.values() for w in words.split())


def word(token: str) -> str | None:
    """One lower-case word's person-neutral form, or None when person does not touch it."""
    if token in _lexicon():
        return PERSON
    return _AGREEMENT.get(token)


def neutral(text: str) -> str:
    """``text`` lower-cased, each person word as ``⟨p⟩``, agreement dropped, spaces single."""
    words = _lexicon()
    out = []
    for m in _TOKEN.finditer(_ZH.sub(f" {PERSON} ", text.lower())):
        token = m.group(0)
        if re.fullmatch(_USER, token, re.I) or token in words or token.rstrip("'") + "'" in words:
            token = PERSON
        elif token == "'s" and out and out[-1] == PERSON:
            continue  # 'the user's' is one possessive
        elif out and out[-1] == PERSON and token not in _AGREEMENT and re.fullmatch(r"[a-z]{3,}[^s]s", token):
            token = token[:-1]  # 'the user wants' is 'I want'
        out.append(_AGREEMENT.get(token, token))
    return " ".join(out)


@functools.lru_cache(maxsize=256)
def neutral_cached(text: str) -> str:
    return neutral(text)


def said(phrase: str, public: str) -> bool:
    """Whether ``phrase`` is in ``public`` word for word once person is set aside."""
    form = neutral(phrase).strip()
    return bool(form) and f" {form} " in f" {neutral_cached(public)} "
