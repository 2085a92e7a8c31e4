"""Seed ranges of the procedural scenes: training, the held-out test split and the sample scene.

A seed names one scene (room, objects, materials, light, cameras) for good. The ranges never overlap,
so a model trained on TRAIN is never evaluated on a scene it saw. This file must not change a range
once a model has been trained on it (the model's metadata records the generator version and ranges).
"""

TRAIN_FIRST = 1_000_000          # training draws seeds from [TRAIN_FIRST, TRAIN_FIRST + TRAIN_COUNT)
TRAIN_COUNT = 1_000_000_000
TEST_FIRST = 1_000               # held-out test pairs: [TEST_FIRST, TEST_FIRST + TEST_COUNT)
TEST_COUNT = 10_000
SAMPLE_SEED = 17                 # the scene of samples/view_a.png and view_b.png (held out too)


def is_training_seed(seed):
    return TRAIN_FIRST <= seed < TRAIN_FIRST + TRAIN_COUNT


def test_seeds(count, first=TEST_FIRST):
    if count > TEST_COUNT:
        raise ValueError(f"the test split has {TEST_COUNT} seeds, {count} asked")
    return list(range(first, first + count))
