"""Fixtures for the suite. The server tests need a running `posthorn serve`, API keys and
an operator key, given by `sdk/test.sh` in the environment; without them they are skipped,
unless POSTHORN_REQUIRE_SERVER=1 (as in test.sh), when they fail."""

import json
import os
import socket
import urllib.request

import pytest


def _env(name):
    value = os.environ.get(name)
    if not value:
        if os.environ.get("POSTHORN_REQUIRE_SERVER") == "1":
            pytest.fail(f"{name} is not set")
        pytest.skip(f"{name} is not set: run sdk/test.sh for the server tests")
    return value


@pytest.fixture(scope="session")
def base_url():
    return _env("POSTHORN_TEST_URL")


@pytest.fixture(scope="session")
def business_key():
    return _env("POSTHORN_TEST_KEY_BUSINESS")


@pytest.fixture(scope="session")
def trial_keys():
    return _env("POSTHORN_TEST_KEY_TRIAL_A"), _env("POSTHORN_TEST_KEY_TRIAL_B")


@pytest.fixture(scope="session")
def operator_key():
    return _env("POSTHORN_OPERATOR_KEY")


@pytest.fixture(scope="session")
def operator_openapi(base_url):
    with urllib.request.urlopen(base_url + "/operator/v1/openapi.json", timeout=10) as r:
        return json.load(r)


@pytest.fixture(scope="session")
def openapi(base_url):
    with urllib.request.urlopen(base_url + "/public/v1/openapi.json", timeout=10) as r:
        return json.load(r)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
