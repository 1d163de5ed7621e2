"""Fuzz the env server's HTTP API from its own OpenAPI document (schemathesis): no 5xx, still healthy."""
from __future__ import annotations

import httpx
import pytest

schemathesis = pytest.importorskip("schemathesis", reason="fuzzing needs schemathesis (pip install -e '.[test]')")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.slow


def _operations(url: str):
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_fuzz_no_server_error(echo_server, mode):
    """Schema-conforming and schema-violating requests to every operation get a documented JSON answer, never a 5xx."""
    url = echo_server.urls[0]
    for _ in range(4):  # a few live sessions, so small generated ids hit real ones
        sid = httpx.post(f"{url}/create", timeout=10).json()["id"]
        httpx.post(f"{url}/reset", json={"id": sid, "data_idx": 0}, timeout=10)
    checks = [not_a_server_error, content_type_conformance]
    if mode == "positive":  # /batch answers 200 with per-op statuses, so only valid input is checked against the schema
        checks += [status_code_conformance, response_schema_conformance]
    operations = _operations(url)
    assert len(operations) == 9  # the 8 of AgentGym's protocol (+ our extensions) and GET /tasks
    fuzzed = []
    for operation in operations:
        @given(case=operation.as_strategy(generation_mode=GenerationMode(mode)))
        @settings(max_examples=15, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def fuzz(case):
            response = case.call(base_url=url, timeout=10)
            case.validate_response(response, checks=checks)

        try:
            fuzz()
        except Unsatisfiable:  # negative mode: an operation without inputs cannot be made invalid
            assert mode == "negative" and operation.method.upper() == "GET" and operation.path != "/observation"
            continue
        fuzzed.append(operation.path)
    assert len(fuzzed) >= 6, fuzzed


def test_server_healthy_after_fuzzing(echo_server):
    """Runs after the fuzz cases (file order): the same process still answers and serves episodes."""
    url = echo_server.urls[0]
    assert echo_server.alive() == [True]
    health = httpx.get(f"{url}/health", timeout=10).json()
    assert health["status"] == "ok"
    sid = httpx.post(f"{url}/create", timeout=10).json()["id"]
    assert httpx.post(f"{url}/reset", json={"id": sid, "data_idx": 1}, timeout=10).status_code == 200
    step = httpx.post(f"{url}/step", json={"id": sid, "action": "hello", "seq": 1}, timeout=10).json()
    assert step["observation"] == "you said 'hello'"


@pytest.mark.parametrize("body", [b"{", b"\xff\xfe", b"[1,2]", b'"text"', b"null", b"{\"id\": 1e999}",
                                  b'{"id": 0, "action": ' + b"[" * 5000 + b"]" * 5000 + b"}"])
def test_malformed_bodies_are_4xx(echo_server, body):
    """Bodies no schema generator writes (broken JSON, bad UTF-8, deep nesting) are refused with a 4xx."""
    resp = httpx.post(f"{echo_server.urls[0]}/step", content=body,
                      headers={"content-type": "application/json"}, timeout=10)
    assert 400 <= resp.status_code < 500, resp.text
    assert "error" in resp.json()
