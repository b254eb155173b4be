"""Generated texts for measuring the secret scrubber (``runtime.folder.scrub``) from the outside.

``leaky_texts`` plants given keys in the shapes providers and proxies echo them back in: bearer
headers, ``x-api-key``/``x-goog-api-key`` headers, JSON fields, URL queries, a bare key inside
an error sentence, Python reprs of header dicts. ``clean_texts`` are ordinary run output
(τ²-style ids, amounts, dates, tool calls, model names, paths) that must pass unchanged.
"""

from __future__ import annotations

import json
import random

SHAPES = [
    "Authorization: Bearer {key}",
    "authorization=Bearer {key} accept=application/json",
    '{{"error": {{"message": "invalid key", "headers": {{"Authorization": "Bearer {key}"}}}}}}',
    "x-api-key: {key}",
    "X-Api-Key={key}; content-type=application/json",
    "x-goog-api-key: {key}",
    "POST /v1beta/models/gemini:generateContent?key={key}&alt=sse",
    '"api_key": "{key}"',
    "api-key={key}",
    "Incorrect API key provided: {key}. You can find your API key at the dashboard.",
    "{{'authorization': 'Bearer {key}', 'user-agent': 'OpenAI/Python'}}",
    "litellm.AuthenticationError: OpenAIException - {key} is not a valid key",
]

CLEAN = [
    "Reservation {code} for user {user} was cancelled; refund of ${amount} to card ending {digits}.",
    "get_user_details(user_id='{user}') -> membership gold, {digits} points",
    "Flight HAT{digits} on 2024-05-{day:02d} from JFK to SFO, cabin economy.",
    "openai/gpt-4o scored 0.{digits} on task {digits} (trial 2, seed {amount})",
    "runs/tau2-airline-refine-openai-gpt-4o/records.jsonl written at 2026-11-30T12:{day:02d}:00Z",
    '{{"name": "book_reservation", "arguments": {{"user_id": "{user}", "payment_id": "credit_card_{digits}"}}}}',
    "The key point of the plan is to verify the token count before step {day}.",
    "max_tokens=512 temperature=0.0 api_base=http://127.0.0.1:8000/v1",
]


def _word(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))


def leaky_texts(keys: list[str], n: int = 500, seed: int = 0) -> list[str]:
    """``n`` texts, each with one of ``keys`` planted in one of :data:`SHAPES`, amid noise."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        shape = SHAPES[i % len(SHAPES)]
        body = shape.format(key=rng.choice(keys))
        prefix = rng.choice(["", "Error code: 401 - ", f"{_word(rng, 6)} failed: ", "litellm: "])
        text = prefix + body
        if rng.random() < 0.3:
            text = json.dumps({"message": text})  # as it sits inside a record
        texts.append(text)
    return texts


def clean_texts(n: int = 300, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        CLEAN[i % len(CLEAN)].format(
            code=_word(rng, 6).upper(), user=f"{_word(rng, 5)}_{_word(rng, 5)}_{rng.randrange(1000, 9999)}",
            amount=rng.randrange(10, 5000), digits=rng.randrange(1000, 9999), day=rng.randrange(1, 28))
        for i in range(n)
    ]
