"""Wire-level fakes of the model providers the runtime is configured for (Gemini, Anthropic,
OpenAI, DashScope), served on loopback and reached by litellm through each provider's own
prefix with ``api_base`` pointed at them. Each checks requests against the provider's documented
rules and refuses a bad one with the provider's own error shape and status (see each module).
"""

from tests.provider_fakes.anthropic import AnthropicFake
from tests.provider_fakes.base import Answer, FakeProvider, Refused, Turn
from tests.provider_fakes.gemini import GeminiFake
from tests.provider_fakes.openai_compat import DashScopeFake, OpenAIFake

FAKES = {"gemini": GeminiFake, "anthropic": AnthropicFake, "openai": OpenAIFake,
         "dashscope": DashScopeFake}
"""litellm provider prefix → fake."""

MODELS = {"gemini": "gemini/gemini-3-pro-preview", "anthropic": "anthropic/claude-sonnet-4-5",
          "openai": "openai/gpt-4o", "dashscope": "dashscope/qwen3-vl-235b-a22b-instruct"}
"""The model each provider's tests name (the paper's config where it names one)."""

__all__ = ["FAKES", "MODELS", "AnthropicFake", "Answer", "DashScopeFake", "FakeProvider",
           "GeminiFake", "OpenAIFake", "Refused", "Turn"]
