"""Dataset recipes: the built-in files, per-scale values, content hashes and every bad input."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from perfsuite.data.recipes import (
    BUILTIN_RECIPES,
    GENERATOR_VERSION,
    SCALES,
    Recipe,
    known_recipes,
    load_recipe,
    parse_recipe_file,
)
from perfsuite.errors import PerfsuiteError

pytest_plugins = ("pytester",)

BUILTIN = ("fixed-224", "imagenet-like", "variable-shapes")

BASE = {
    "description": '"test recipe"',
    "classes": "3",
    "width": "[40, 60]",
    "height": "32",
    "quality": "80",
    "subsampling": '"4:4:4"',
    "seed": "7",
}


def _recipe_text(base: dict[str, str], smoke: dict[str, str]) -> str:
    lines = [
        "[recipe]",
        *(f"{k} = {v}" for k, v in base.items()),
        "",
        "[scale.smoke]",
        *(f"{k} = {v}" for k, v in smoke.items()),
        "",
        "[scale.default]",
        "count = 10",
    ]
    return "\n".join(lines) + "\n"


GOOD = _recipe_text(BASE, {"count": "5"})


def _write(tmp_path: Path, text: str, name: str = "mine") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_builtin_recipes_are_there() -> None:
    assert set(BUILTIN) <= set(known_recipes([BUILTIN_RECIPES]))


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", BUILTIN)
def test_builtin_recipe_loads_at_every_scale(name: str, scale: str) -> None:
    recipe = load_recipe(name, scale)
    assert recipe.name == name
    assert recipe.scale == scale
    assert recipe.count >= 1
    assert recipe.source == str(BUILTIN_RECIPES / f"{name}.toml")
    assert recipe.description


def test_counts_grow_with_scale() -> None:
    for name in BUILTIN:
        counts = [load_recipe(name, s).count for s in SCALES]
        assert counts == sorted(counts)
        assert counts[0] < counts[2]


def test_imagenet_like_values() -> None:
    recipe = load_recipe("imagenet-like", "default")
    assert recipe.width == (300, 500)
    assert recipe.height == (300, 500)
    assert recipe.classes == 10
    assert recipe.quality == 90
    assert recipe.subsampling == "4:2:0"
    assert load_recipe("fixed-224", "smoke").width == (224, 224)


def test_parsed_values_and_defaults(tmp_path: Path) -> None:
    recipe = parse_recipe_file(_write(tmp_path, GOOD), "smoke")
    assert recipe == Recipe(
        name="mine",
        scale="smoke",
        count=5,
        classes=3,
        width=(40, 60),
        height=(32, 32),
        quality=80,
        subsampling="4:4:4",
        seed=7,
        description="test recipe",
        source=str(tmp_path / "mine.toml"),
    )
    minimal = "[recipe]\ncount = 2\nclasses = 1\nwidth = 16\nheight = 16\nseed = 1\n"
    plain = parse_recipe_file(_write(tmp_path, minimal, "plain"), "full")
    assert plain.quality == 90
    assert plain.subsampling == "4:2:0"


def test_unknown_recipe_lists_the_known_ones() -> None:
    with pytest.raises(PerfsuiteError) as info:
        load_recipe("imagenet-liek")
    message = str(info.value)
    assert "unknown recipe 'imagenet-liek'" in message
    for name in BUILTIN:
        assert name in message


def test_unknown_scale() -> None:
    with pytest.raises(PerfsuiteError, match=r"unknown scale 'huge'.*smoke, default, full"):
        load_recipe("fixed-224", "huge")


def test_extra_folder_is_searched_first(tmp_path: Path) -> None:
    _write(tmp_path, GOOD, "fixed-224")
    recipe = load_recipe("fixed-224", "smoke", tmp_path)
    assert recipe.source == str(tmp_path / "fixed-224.toml")
    assert recipe.count == 5
    _write(tmp_path, GOOD, "only-here")
    assert load_recipe("only-here", "default", tmp_path).count == 10
    with pytest.raises(PerfsuiteError, match="only-here"):
        load_recipe("nope", "smoke", tmp_path)  # the message lists the extra folder's recipes


BAD_FILES = [
    ("classes = 3\nclasses = 4\n", "not valid TOML"),
    ("[recipe\n", "not valid TOML"),
    ("[recipe]\ncount = 1\n[extra]\nx = 1\n", "unknown table(s) extra"),
    ("[scale.smoke]\ncount = 1\n", "missing [recipe] table"),
    (
        "[recipe]\ncount = 1\nclasses = 1\nwidth = 8\nheight = 8\nseed = 1\n"
        "[scale.huge]\ncount = 1\n",
        "unknown scale table(s) huge",
    ),
    (
        "[recipe]\ncount = 1\nclasses = 1\nwidth = 8\nheight = 8\nseed = 1\nscale = 3\n",
        "unknown key 'scale'",
    ),
    ("[recipe]\nclasses = 1\nwidth = 8\nheight = 8\nseed = 1\n", "missing key(s) count"),
]


@pytest.mark.parametrize(("text", "fragment"), BAD_FILES)
def test_malformed_recipe_file_names_the_file(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, text, "broken")
    with pytest.raises(PerfsuiteError) as info:
        parse_recipe_file(path, "smoke")
    message = str(info.value)
    assert message.startswith(str(path))
    assert fragment in message
    assert "\n" not in message


BAD_VALUES = [
    ("quality", "101", "[recipe]", "1..100"),
    ("quality", "0", "[recipe]", "1..100"),
    ("quality", '"high"', "[recipe]", "1..100"),
    ("classes", "0", "[recipe]", "1..100000"),
    ("seed", "-1", "[recipe]", "whole number"),
    ("seed", "true", "[recipe]", "whole number"),
    ("count", "2.5", "[scale.smoke]", "whole number"),
    ("count", "0", "[scale.smoke]", "1..10000000"),
    ("width", "[500, 300]", "[recipe]", "8 <= min <= max"),
    ("width", "[1, 2, 3]", "[recipe]", "[min, max]"),
    ("height", "4", "[recipe]", "8 <= min <= max"),
    ("height", '"big"', "[recipe]", "[min, max]"),
    ("subsampling", '"4:1:1"', "[recipe]", "4:4:4, 4:2:2, 4:2:0"),
    ("description", "3", "[recipe]", "string"),
    ("colour", '"red"', "[recipe]", "unknown key 'colour'"),
]


@pytest.mark.parametrize(("key", "value", "table", "fragment"), BAD_VALUES)
def test_bad_value_names_the_file_and_key(
    tmp_path: Path, key: str, value: str, table: str, fragment: str
) -> None:
    base, smoke = dict(BASE), {"count": "5"}
    (smoke if table == "[scale.smoke]" else base)[key] = value
    path = _write(tmp_path, _recipe_text(base, smoke), "badvalue")
    with pytest.raises(PerfsuiteError) as info:
        parse_recipe_file(path, "smoke")
    message = str(info.value)
    assert message.startswith(f"{path} {table}: ")
    assert repr(key) in message
    assert fragment in message


def test_hash_is_stable_and_ignores_description_and_source(tmp_path: Path) -> None:
    recipe = parse_recipe_file(_write(tmp_path, GOOD), "smoke")
    again = parse_recipe_file(_write(tmp_path, GOOD), "smoke")
    assert recipe.hash == again.hash
    assert len(recipe.hash) == 64
    assert recipe.short_hash == recipe.hash[:12]
    assert recipe.dirname == f"mine-smoke-{recipe.short_hash}"
    moved = dataclasses.replace(recipe, description="other words", source="/elsewhere.toml")
    assert moved.hash == recipe.hash
    assert recipe.to_dict()["hash"] == recipe.hash
    assert GENERATOR_VERSION >= 1


CHANGES: list[tuple[str, Any]] = [
    ("count", 6),
    ("classes", 4),
    ("width", (40, 61)),
    ("width", (41, 60)),
    ("height", (32, 33)),
    ("quality", 81),
    ("subsampling", "4:2:0"),
    ("seed", 8),
    ("scale", "default"),
    ("name", "x"),
]


@pytest.mark.parametrize(("field", "value"), CHANGES)
def test_hash_changes_when_any_value_changes(tmp_path: Path, field: str, value: Any) -> None:
    recipe = parse_recipe_file(_write(tmp_path, GOOD), "smoke")
    changed = dataclasses.replace(recipe, **{field: value})
    assert changed.hash != recipe.hash
    assert changed.dirname != recipe.dirname


def test_hash_changes_when_the_file_changes(tmp_path: Path) -> None:
    before = parse_recipe_file(_write(tmp_path, GOOD), "smoke")
    after = parse_recipe_file(_write(tmp_path, GOOD.replace("seed = 7", "seed = 8")), "smoke")
    assert before.hash != after.hash


def test_overrides_are_checked_like_the_file() -> None:
    recipe = load_recipe("imagenet-like", "smoke")
    assert recipe.with_overrides() is recipe
    small = recipe.with_overrides(count=8, width=64, height=[48, 64], quality=75)
    assert (small.count, small.width, small.height, small.quality) == (8, (64, 64), (48, 64), 75)
    assert small.hash != recipe.hash
    assert small.source == recipe.source
    with pytest.raises(PerfsuiteError, match="overrides for recipe 'imagenet-like': key 'count'"):
        recipe.with_overrides(count=-1)
    with pytest.raises(PerfsuiteError, match="unknown key 'colour'"):
        recipe.with_overrides(colour="red")


def test_shapes_are_deterministic_and_in_range() -> None:
    recipe = load_recipe("variable-shapes", "default")
    shapes = recipe.shapes()
    assert len(shapes) == recipe.count
    assert shapes == load_recipe("variable-shapes", "default").shapes()
    assert recipe.shapes(3) == shapes[:3]
    for height, width in shapes:
        assert recipe.height[0] <= height <= recipe.height[1]
        assert recipe.width[0] <= width <= recipe.width[1]
    assert len(set(shapes)) > 1  # the retracing bench needs varied shapes
    other = recipe.with_overrides(seed=recipe.seed + 1)
    assert other.shapes() != shapes


def test_layout_and_labels() -> None:
    recipe = load_recipe("imagenet-like", "smoke")
    assert recipe.label(0) == 0
    assert recipe.label(recipe.classes) == 0
    assert recipe.label(13) == 13 % recipe.classes
    assert recipe.relpath(13) == f"class_{13 % recipe.classes:03d}/000013.jpg"


# -- the dataset_recipe fixture ------------------------------------------------------------

FIXTURE_TESTS = """
import pytest

def test_scale_follows_the_session(dataset_recipe, perf_settings):
    recipe = dataset_recipe("fixed-224")
    assert recipe.scale == perf_settings.scale.value == "smoke"
    assert recipe.width == (224, 224)

def test_overrides(dataset_recipe):
    base = dataset_recipe("imagenet-like")
    small = dataset_recipe("imagenet-like", count=3, quality=70)
    assert (small.count, small.quality) == (3, 70)
    assert small.hash != base.hash

def test_extra_recipe_folder(dataset_recipe):
    assert dataset_recipe("mine").count == 5

def test_unknown_recipe(dataset_recipe):
    dataset_recipe("no-such-recipe")

def test_bad_recipe_file(dataset_recipe):
    dataset_recipe("broken")

def test_bad_override(dataset_recipe):
    dataset_recipe("fixed-224", quality=0)
"""


def test_dataset_recipe_fixture(pytester: pytest.Pytester, inner_args: list[str]) -> None:
    recipes = pytester.mkdir("recipes")
    _write(recipes, GOOD)
    _write(recipes, GOOD.replace("quality = 80", "quality = 800"), "broken")
    pytester.makepyfile(test_inner=FIXTURE_TESTS)
    result = pytester.runpytest(*inner_args, "--perf-scale=smoke", f"--perf-recipes={recipes}")
    result.assert_outcomes(passed=3, failed=3)
    out = str(result.stdout)
    assert "unknown recipe 'no-such-recipe'; known recipes: broken, fixed-224, imagenet-like" in out
    assert f"{recipes / 'broken.toml'} [recipe]: key 'quality' is 800" in out
    assert "overrides for recipe 'fixed-224': key 'quality' is 0" in out
    assert "Traceback" not in out
