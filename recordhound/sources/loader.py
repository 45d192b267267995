"""Find a source's profile file (user folders first, then the bundled ones) and load it."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import yaml

from recordhound.exceptions import ProfileError
from recordhound.sources.profile import Profile
from recordhound.sources.schema import build_profile

BUNDLED = "recordhound.sources.profiles"


def bundled_names() -> list[str]:
    folder = resources.files(BUNDLED)
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def find_profile(source: str, dirs: Iterable[str] = ()) -> str:
    """The path of SOURCE's profile, or of ``source`` itself when it names a file."""
    if source.endswith((".yaml", ".yml")):
        if Path(source).is_file():
            return source
        raise ProfileError(source, "(file)", "no such file")
    for folder in dirs:
        candidate = Path(folder) / f"{source}.yaml"
        if candidate.is_file():
            return str(candidate)
    bundled = resources.files(BUNDLED) / f"{source}.yaml"
    if bundled.is_file():
        return str(bundled)
    searched = [str(Path(d) / f"{source}.yaml") for d in dirs] + [f"bundled: {bundled_names()}"]
    raise ProfileError(f"{source}.yaml", "(file)", f"no profile for source {source!r}; looked in {searched}")


def load_profile(source: str, dirs: Iterable[str] = ()) -> Profile:
    path = find_profile(source, dirs)
    try:
        text = Path(path).read_text(encoding="utf-8")
        document = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(path, "(file)", f"cannot read it: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ProfileError(path, "(file)", f"not valid YAML: {exc}") from exc
    return build_profile(path, document)
