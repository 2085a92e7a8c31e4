"""recon.Client against a real recond on the CPU device: results are zero-copy numpy views that
outlive their Result, errors carry the daemon's code, threads share one connection, and every verb
(pairs, batches, matching, retrieval, the generic infer_model, reconstruct) answers what librecon
answers."""

import gc
import os
import threading
import time

import numpy
import pytest
from PIL import Image

import recon
from conftest import DEMO_MODEL, TINY_MODEL, H, W, Recond, image

PAIR_TENSORS = {"pts3d_1", "pts3d_2", "conf_1", "conf_2", "desc_1", "desc_2", "desc_conf_1", "desc_conf_2"}


def mapping_of(address):
    """The /proc/self/maps path of the mapping that holds `address`."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                return fields[5] if len(fields) > 5 else ""
    return None


def result_bytes(client):
    return sum(device["result_bytes"] for device in client.status()["devices"])


def test_a_pair_is_read_as_views_of_shared_memory(client):
    result = client.infer(image(1), image(2))
    assert set(result.keys()) == PAIR_TENSORS
    assert result.info["pts3d_1"][0] == (H, W, 3)
    pts = result["pts3d_1"]
    assert pts.shape == (H, W, 3) and pts.dtype == numpy.float32
    assert numpy.isfinite(pts).all()
    assert (result["conf_2"] >= 1.0).all()  # conf = 1 + exp(x)
    # Zero copy: the array lies in this client's memfd output region, owns nothing, is read-only,
    # and reading it again gives the same memory.
    assert mapping_of(pts.ctypes.data).startswith("/memfd:recon-output")
    assert not pts.flags.owndata and not pts.flags.writeable
    assert result["pts3d_1"].ctypes.data == pts.ctypes.data
    assert numpy.array_equal(result.pts3d_1, pts)
    with pytest.raises(AttributeError):
        result.not_a_tensor
    assert result.timings["compute_ms"] > 0


def test_arrays_outlive_their_result_and_the_handle_goes_with_the_last(client):
    result = client.infer(image(3), image(4))
    conf = result["conf_1"]
    kept = conf.copy()
    assert result_bytes(client) > 0
    del result
    gc.collect()
    assert numpy.array_equal(conf, kept)  # the view still reads the same memory
    assert result_bytes(client) > 0  # held by the view
    del conf
    gc.collect()
    deadline = time.monotonic() + 10
    while result_bytes(client) > 0 and time.monotonic() < deadline:  # Release is fire-and-forget
        time.sleep(0.05)
    assert result_bytes(client) == 0


def test_errors_carry_the_daemons_code(client):
    with pytest.raises(recon.Error) as refused:
        client.infer(image(1), image(2), model="nope")
    assert refused.value.code == "NOT_FOUND" and refused.value.source == "daemon"
    assert "nope" in refused.value.message
    with pytest.raises(recon.Error) as bad:
        client.infer(numpy.zeros((4, 4), numpy.uint8), image(2))
    assert bad.value.code == "INVALID_ARGUMENT" and bad.value.source == "client"
    result = client.infer(image(1), image(2), outputs=["pts3d_1"])
    assert result.keys() == ["pts3d_1"]
    with pytest.raises(recon.Error) as missing:
        result["desc_1"]
    assert missing.value.code == "NOT_FOUND"


def test_threads_share_one_client_and_get_the_same_pair(client, tiny_daemon):
    expected = client.infer(image(5), image(6))["pts3d_2"].copy()
    got = [None] * 4
    errors = []

    def run(k):
        try:
            got[k] = client.infer(image(5), image(6))["pts3d_2"].copy()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g in got:
        assert numpy.array_equal(g, expected)
    futures = [client.infer_async(image(5), image(6)) for _ in range(3)]
    for f in futures:
        assert numpy.array_equal(f.result(timeout=120)["pts3d_2"], expected)
        assert f.done()
    # A Future keeps its Client (and the buffers its images are in) alive.
    orphan = recon.Client(tiny_daemon.sockets).infer_async(image(5), image(6))
    gc.collect()
    assert numpy.array_equal(orphan.result(timeout=120)["pts3d_2"], expected)


def test_paths_read_as_the_same_pixels(client, tmp_path):
    a, b = image(7), image(8)
    Image.fromarray(a).save(tmp_path / "a.png")
    Image.fromarray(b).save(tmp_path / "b.png")
    from_paths = client.infer(str(tmp_path / "a.png"), tmp_path / "b.png")
    assert numpy.array_equal(from_paths["pts3d_1"], client.infer(a, b)["pts3d_1"])


def test_a_batch_its_match_and_the_generic_call(client):
    images = [image(9), image(10), image(11)]
    results = client.infer_batch(images, pairs=[(0, 2)], symmetric=True)
    assert [r.pair for r in results] == [(0, 2), (2, 0)]
    single = client.infer(images[0], images[2])
    numpy.testing.assert_allclose(results[0]["pts3d_1"], single["pts3d_1"], rtol=1e-4, atol=1e-4)

    matches = client.match(single, subsample=4)
    assert matches.model == "match"
    count = matches.match_count
    assert matches["matches_1"].shape == (count, 2) and matches["matches_1"].dtype == numpy.int32
    # The generic request: a pair by its named inputs, its match by reference (it stays on the GPU).
    generic = client.infer_model("mast3r", {"image1": images[0], "image2": images[2]})
    assert numpy.array_equal(generic["pts3d_1"], single["pts3d_1"])
    generic_matches = client.infer_model("match", {"pair": generic}, {"subsample": "4"})
    assert numpy.array_equal(generic_matches["matches_1"], matches["matches_1"])
    with pytest.raises(recon.Error) as misnamed:
        client.infer_model("match", {"source": generic})
    assert misnamed.value.code == "INVALID_ARGUMENT" and "pair" in misnamed.value.message


def test_retrieval_embeddings_and_pairs(client):
    images = [image(12), image(13), image(14)]
    result, pairs, scores = client.retrieve(images, top_k=1)
    assert result["embeddings"].shape[0] == 3
    assert pairs.shape == (3, 2) and scores.shape == (3,)
    assert list(pairs[:, 0]) == [0, 1, 2] and all(pairs[:, 0] != pairs[:, 1])
    generic = client.infer_model("retrieval", {"images": images}, {"top_k": "1"})
    assert numpy.array_equal(generic["top_pairs"], pairs.astype(numpy.int32))
    numpy.testing.assert_array_equal(generic["top_scores"], scores)


def test_status_and_session(client):
    status = client.status()
    assert status["state"] == "READY"
    assert any(m["name"] == "mast3r" and m["state"] == "READY" for m in status["models"])
    assert client.session["max_handles"] > 0


def test_reconstruct_reports_progress_and_returns_the_scene():
    daemon = Recond(DEMO_MODEL)
    try:
        client = recon.Client(daemon.sockets, timeout=300)
        events = []
        scene = client.reconstruct([image(15), image(16), image(17)], progress=events.append, resolution=(H, W),
                                   niter1=10, niter2=10)
        stages = [e["stage"] for e in events]
        assert stages[0] == "encode" and "pairs" in stages and stages[-1] == "outputs"
        assert scene.model == "reconstruct"
        poses = scene["cam_to_world"]
        assert poses.shape == (3, 4, 4) and numpy.isfinite(poses).all()
        with pytest.raises(recon.Error) as bad:
            client.reconstruct([image(15), image(16)], resolution=(H, W), nope=1)
        assert bad.value.code == "INVALID_ARGUMENT" and "nope" in bad.value.message
        del scene, poses, client
        gc.collect()
    finally:
        assert daemon.stop() == 0, daemon.read_log()


def test_an_onnx_model_takes_numpy_tensors_and_bool_masks_and_chains_on_the_gpu():
    models = os.environ.get("RECON_ONNX_TORCH_MODELS", "")
    if not os.path.exists(os.path.join(models, "mlp", "model.onnx")):
        pytest.skip("no exported ONNX test models (RECON_ONNX_TORCH_MODELS)")
    daemon = Recond(TINY_MODEL, "--model", "mlp=" + os.path.join(models, "mlp", "model.onnx"),
                    "--model", "head=" + os.path.join(models, "head", "model.onnx"),
                    "--model", "masked=" + os.path.join(models, "masked", "model.onnx"))
    try:
        c = recon.Client(daemon.sockets, client_name="pytest-onnx", timeout=120)
        x = numpy.load(os.path.join(models, "mlp", "input_1.npy"))
        y = c.infer_model("mlp", {"x": x})
        assert numpy.abs(y["y"] - numpy.load(os.path.join(models, "mlp", "expected_1.npy"))).max() < 1e-5
        # The head reads y's tensor where it lies on the GPU.
        z = c.infer_model("head", {"x": (y, "y")})
        assert numpy.abs(z["z"] - numpy.load(os.path.join(models, "head", "chain_expected_1.npy"))).max() < 1e-5
        # A NumPy bool mask goes as one byte each; the bool output comes back as int32 0 or 1.
        masked = os.path.join(models, "masked")
        r = c.infer_model("masked", {"x": numpy.load(os.path.join(masked, "x_1.npy")),
                                     "mask": numpy.load(os.path.join(masked, "mask_1.npy"))})
        assert numpy.abs(r["y"] - numpy.load(os.path.join(masked, "y_1.npy"))).max() < 1e-5
        assert numpy.array_equal(r["positive"], numpy.load(os.path.join(masked, "positive_1.npy")).astype(numpy.int32))
        with pytest.raises(recon.Error) as refused:
            c.infer_model("mlp", {"x": x.astype(numpy.int32)})
        assert refused.value.code == "INVALID_ARGUMENT" and "must be FLOAT" in str(refused.value)
    finally:
        assert daemon.stop() == 0, daemon.read_log()
