"""recon.Engine: MASt3R in this process on the GPU (lavapipe here), no daemon.

The tiny golden model's pair against its reference forward (float64 PyTorch, tests/reference), the
batch path against pairs one at a time, its matches and its retrieval against the daemon's Match
and EncodeRetrieval on the same images, lifetimes and errors.
"""

import os
import sys

import numpy
import pytest

import recon
from conftest import RETRIEVAL_HEAD, SOURCE, TINY_MODEL, image

sys.path.insert(0, os.path.join(SOURCE, "tests", "reference"))
import safetensors_io  # noqa: E402

OUTPUTS = ["pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_1", "desc_2", "desc_conf_1", "desc_conf_2"]


@pytest.fixture(scope="module")
def golden():
    tensors, _ = safetensors_io.load_file(os.path.join(SOURCE, "tests/golden/tiny_same/io.safetensors"))
    return tensors


@pytest.fixture(scope="module")
def engine():
    return recon.Engine(TINY_MODEL, precision="fp32")


def test_a_pair_equals_the_reference_forward(engine, golden):
    result = engine.infer(golden["img1_u8"], golden["img2_u8"], size=64)
    assert sorted(result.names()) == sorted(OUTPUTS)
    for name in OUTPUTS:
        want = golden[name][0]
        got = result[name]
        assert got.shape == want.shape and got.dtype == numpy.float32, name
        assert not got.flags.writeable
        error = numpy.abs(got - want).max() / max(numpy.abs(want).max(), 1e-6)
        assert error < 1e-4, f"{name}: relative error {error:.2e}"
    assert result.pts3d_1 is result["pts3d_1"]  # copied once
    view = result.views()[0]
    assert (view["width"], view["height"], view["original_width"]) == (64, 48, 64)
    assert result.timings()["gpu_ms"] > 0


def test_a_dune_model_pair_equals_the_reference_forward():
    """DUNE-MASt3R (tests/golden/dune_same): the model's own preparation (56 on the long side, 14-px
    crops, the square view kept square) without a size argument, equal to the reference."""
    tensors, _ = safetensors_io.load_file(os.path.join(SOURCE, "tests/golden/dune_same/io.safetensors"))
    dune = recon.Engine(os.path.join(SOURCE, "tests/golden/dune_same/model.safetensors"), precision="fp32")
    result = dune.infer(tensors["img1_u8"], tensors["img2_u8"])
    for name in OUTPUTS:
        want = tensors[name][0]
        got = result[name]
        assert got.shape == want.shape, name
        error = numpy.abs(got - want).max() / max(numpy.abs(want).max(), 1e-6)
        assert error < 1e-5, f"{name}: relative error {error:.2e}"
    assert [(v["width"], v["height"]) for v in result.views()] == [(56, 56), (56, 42)]
    # an image of another size is prepared as the official loader would for this model
    wide = numpy.resize(image(1), (60, 80, 3))
    square = numpy.resize(image(2), (70, 70, 3))
    bigger = dune.infer(wide, square)
    assert bigger["desc_1"].shape == (42, 56, 24) and bigger["desc_2"].shape == (56, 56, 24)


def test_a_batch_equals_its_pairs_one_at_a_time(engine, golden):
    a, b = golden["img1_u8"], golden["img2_u8"]
    batch = engine.infer_batch([a, b, a], pairs=[(0, 1), (1, 2)], size=64)
    assert len(batch) == 2
    for result, (x, y) in zip(batch, [(a, b), (b, a)]):
        single = engine.infer(x, y, size=64)
        for name in OUTPUTS:
            numpy.testing.assert_allclose(result[name], single[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert len(engine.infer_batch([a, b, a, b], size=64)) == 3  # consecutive pairs by default


def test_matches_equal_the_daemons(engine, client):
    a, b = image(21), image(22)
    ours = engine.infer(a, b, size=64)
    theirs = client.infer(a, b)
    numpy.testing.assert_array_equal(ours["desc_1"], theirs["desc_1"])
    for subsample, max_matches, min_confidence in [(4, 0, 0.0), (4, 5, 0.0), (8, 0, 1.5)]:
        matched = engine.match(ours, subsample=subsample, max_matches=max_matches, min_confidence=min_confidence)
        daemon = client.match(theirs, subsample=subsample, max_matches=max_matches, min_confidence=min_confidence)
        for name in ["matches_1", "matches_2", "match_conf", "pts3d_1", "pts3d_2"]:
            numpy.testing.assert_array_equal(matched[name], daemon[name], err_msg=f"{name} at {subsample}")
    assert len(engine.match(ours, subsample=4, max_matches=5)["matches_1"]) <= 5
    with pytest.raises(recon.Error) as bad:
        engine.match(ours, subsample=0)
    assert bad.value.code == "INVALID_ARGUMENT"


def test_retrieval_equals_the_daemons(client):
    engine = recon.Engine(TINY_MODEL, precision="fp32", retrieval=RETRIEVAL_HEAD)
    images = [image(12), image(13), image(14)]
    ours = engine.encode_retrieval(images, top_k=1, size=64)
    theirs = client.infer_model("retrieval", {"images": images}, {"top_k": "1"})
    for name in ["embeddings", "features", "attention", "token_index", "top_pairs", "top_scores"]:
        numpy.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert "top_pairs" not in engine.encode_retrieval(images, size=64)
    with pytest.raises(recon.Error) as headless:
        recon.Engine(TINY_MODEL, precision="fp32").encode_retrieval(images, size=64)
    assert headless.value.code == "INVALID_ARGUMENT" and "retrieval" in headless.value.message


def test_results_outlive_the_engine(golden):
    local = recon.Engine(TINY_MODEL, precision="fp32")
    result = local.infer(golden["img1_u8"], golden["img2_u8"], size=64)
    del local
    assert result["conf_1"].shape == (48, 64)


def test_errors_carry_a_code_and_say_what(engine, golden, tmp_path):
    with pytest.raises(recon.Error) as missing:
        recon.Engine(str(tmp_path / "absent.safetensors"))
    assert missing.value.source == "engine" and missing.value.code != "OK"
    with pytest.raises(recon.Error) as precision:
        recon.Engine(TINY_MODEL, precision="fp8")
    assert precision.value.code == "INVALID_ARGUMENT"
    with pytest.raises(recon.Error) as pairs:
        engine.infer_batch([golden["img1_u8"], golden["img2_u8"]], pairs=[(0, 2)], size=64)
    assert pairs.value.code == "INVALID_ARGUMENT" and "outside the batch" in pairs.value.message
    with pytest.raises(recon.Error) as image:
        engine.infer(numpy.zeros((4, 4), numpy.uint8), golden["img2_u8"], size=64)
    assert image.value.code == "INVALID_ARGUMENT"
    result = engine.infer(golden["img1_u8"], golden["img2_u8"], size=64)
    with pytest.raises(KeyError):
        result["pts3d_3"]
