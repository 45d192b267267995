"""Find a source's profile file (user folders first, then the bundled ones) and load it."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml

from recordhound.exceptions import ProfileError
from recordhound.sources.profile import Profile
from recordhound.sources.schema import build_profile



def _bundled() -> Traversable:
    """The bundled profiles: a folder, or a folder inside a zipped egg (scrapyd)."""
    return resources.files("recordhound.sources") / "profiles"


def bundled_names() -> list[str]:
    return sorted(p.name[:-5] for p in _bundled().iterdir() if p.name.endswith(".yaml"))


def find_profile(source: str, dirs: Iterable[str] = ()) -> Traversable:
    """SOURCE's profile file, or ``source`` itself when it names a file."""
    if source.endswith((".yaml", ".yml")):
        if Path(source).is_file():
            return Path(source)
        raise ProfileError(source, "(file)", "no such file")
    for folder in dirs:
        candidate = Path(folder) / f"{source}.yaml"
        if candidate.is_file():
            return candidate
    bundled = _bundled() / f"{source}.yaml"
    if bundled.is_file():
        return bundled
    searched = [str(Path(d) / f"{source}.yaml") for d in dirs] + [f"bundled: {bundled_names()}"]
    raise ProfileError(f"{source}.yaml", "(file)", f"no profile for source {source!r}; looked in {searched}")


def load_profile(source: str, dirs: Iterable[str] = ()) -> Profile:
    found = find_profile(source, dirs)
    path = str(found)
    try:
        text = found.read_text(encoding="utf-8")
        document = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(path, "(file)", f"cannot read it: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ProfileError(path, "(file)", f"not valid YAML: {exc}") from exc
    return build_profile(path, document)
