"""The ``--kind engine`` template of ``agentgym new plugin``: docs/engines.md walks through the same code."""

ENGINE_COMPONENT = '''\
"""A toy engine: a seeded random bigram model over bytes, in plain Python.

It shows what an engine plugin implements (docs/engines.md, "Writing an engine"): generate() samples
token ids with their log-probabilities for a batch of requests, tokenizer is what those ids belong
to, update_weights() takes the policy's new weights; shares_weights and placement tell a trainer how
to work with it. A real engine wraps a model (and a transformers tokenizer, for rollout's chat format).
"""
import math
import random
from dataclasses import dataclass

from agentgym_core import ConfigError, Engine, GenerationResult, engine_settings

EOS = 256  # token ids: the 256 byte values, then end-of-reply


class ByteTokenizer:
    """UTF-8 bytes as token ids."""

    eos_token_id = EOS

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": self.encode(text)}

    def encode(self, text, add_special_tokens=False):
        return list(text.encode("utf-8"))

    def decode(self, ids, skip_special_tokens=False):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


@dataclass
class ${cls}Config:
    """Options of the ``$name`` engine (the ``engine`` section: ``engine: {name: $name, spread: 2.0}``)."""

    #: Where the weights live; a trainer that keeps the engine apart from its own model sets it.
    device: str = "cpu"
    #: How peaked the random next-token preferences are.
    spread: float = 2.0

    def __post_init__(self):
        if self.device != "cpu":
            raise ConfigError(f"engine.device: the $name engine runs on the CPU only, got {self.device!r}")


class $cls(Engine):
    Config = ${cls}Config
    shares_weights = False  # it keeps its own weights: update_weights() gets a state dict
    placement = "option"  # it runs where its Config's device says

    def __init__(self, model, tokenizer=None, *, dtype="auto", chat_template=None, max_context=None, **options):
        self.config = engine_settings(self.Config, options, "$name")
        rng = random.Random(str(model))  # the "model" names the seed of its weights
        self.weights = [[rng.gauss(0.0, self.config.spread) for _ in range(EOS + 1)] for _ in range(EOS + 1)]
        self._tokenizer = tokenizer or ByteTokenizer()
        self.cached = {}  # cache key -> the tokens already run through the model

    @property
    def tokenizer(self):
        return self._tokenizer

    def generate(self, requests):
        return [self._generate(request) for request in requests]

    def update_weights(self, source):
        self.weights = [list(row) for row in source["weights"]]

    def release(self, cache_key):
        self.cached.pop(cache_key, None)

    def _generate(self, request):
        params, prompt = request.params, list(request.prompt_ids)
        known = self.cached.get(request.cache_key, []) if request.cache_key else []
        reused = len(known) if known and prompt[:len(known)] == known else 0
        rng = random.Random(params.seed)
        ids, logprobs, finish, last = [], [], "length", prompt[-1] if prompt else EOS
        stops = {EOS, *params.stop_token_ids}
        while len(ids) < params.max_new_tokens:
            logp = log_softmax(self.weights[last])  # the sampler's log-probabilities: temperature 1
            token = sample(logp, params.temperature, params.top_p, rng)
            ids.append(token)
            logprobs.append(logp[token])
            last = token
            text = self._tokenizer.decode(ids)
            if token in stops or any(s in text for s in params.stop_strings):
                finish = "stop"
                break
        if request.cache_key:
            self.cached[request.cache_key] = prompt + ids
        return GenerationResult(ids, logprobs, finish, prefill_tokens=max(1, len(prompt) - reused))


def log_softmax(row):
    top = max(row)
    total = math.log(sum(math.exp(x - top) for x in row))
    return [x - top - total for x in row]


def sample(logp, temperature, top_p, rng):
    """Greedy at temperature 0; else from the tempered distribution, cut to its top_p mass."""
    if temperature == 0:
        return max(range(len(logp)), key=logp.__getitem__)
    weights = [math.exp(x / temperature) for x in logp]
    order = sorted(range(len(weights)), key=weights.__getitem__, reverse=True)
    total, kept, mass = sum(weights), [], 0.0
    for i in order:
        kept.append(i)
        mass += weights[i] / total
        if mass >= top_p:
            break
    return rng.choices(kept, weights=[weights[i] for i in kept])[0]
'''

ENGINE_TEST = '''\
from agentgym_core import check_component_options, check_engine, get_plugin_manager

from $package.component import $cls


def test_registered():
    assert get_plugin_manager(fresh=True).registry("engines").load("$name") is $cls


def test_options_are_declared_once_in_config():
    check_component_options($cls, "engines")


def test_the_engine_checks_pass():
    check_engine($cls("toy-model"))


def test_new_weights_change_what_it_samples():
    engine, other = $cls("toy-model"), $cls("another-model")
    prompt = engine.tokenizer("Hello")["input_ids"]
    from agentgym_core import GenerationRequest, SamplingParams

    request = GenerationRequest(prompt, SamplingParams(temperature=0.0, max_new_tokens=8))
    before = engine.generate([request])[0].token_ids
    engine.update_weights({"weights": other.weights})
    assert engine.generate([request])[0].token_ids == other.generate([request])[0].token_ids != before
'''
