"""Named formats from the user's configuration (flux-jobs.toml and the like)."""

import pytest

from flux_lite.formats.submitopts import xdg_searchpath
from flux_lite.listing.jobs import JOBS
from flux_lite.listing.resources import RESOURCE_LIST


def test_searchpath_is_flux_s(tmp_path):
    env = {"XDG_CONFIG_HOME": "/h", "XDG_CONFIG_DIRS": "/a:/b"}
    assert xdg_searchpath(env) == ["/h/flux", "/a/flux", "/b/flux"]
    assert xdg_searchpath({"HOME": "/home/u"}) == ["/home/u/.config/flux", "/etc/xdg/flux"]


def test_user_formats_merge_in_precedence_order(tmp_path):
    home, sys_a = tmp_path / "home" / "flux", tmp_path / "a" / "flux"
    home.mkdir(parents=True)
    sys_a.mkdir(parents=True)
    (sys_a / "flux-jobs.toml").write_text('[formats.mine]\ndescription = "system"\nformat = "{id}"\n'
                                          '[formats.other]\nformat = "{name}"\n')
    (home / "flux-jobs.yaml").write_text('formats:\n  mine:\n    description: user\n    format: "{id.words}"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "home"), "XDG_CONFIG_DIRS": str(tmp_path / "a")}
    listing = JOBS.configured(env)
    assert listing.formats["mine"] == ("user", "{id.words}")
    assert listing.formats["other"] == (None, "{name}")
    assert listing.format_string("mine") == "{id.words}"
    assert "  mine         user\n" in listing.help() and "  other       \n" in listing.help()
    assert JOBS.configured({"XDG_CONFIG_HOME": str(tmp_path / "none"), "XDG_CONFIG_DIRS": ""}) is JOBS


@pytest.mark.parametrize("text, message", [
    ('formats = "yay"\n', "the 'formats' key must be a mapping"),
    ("formats.myformat = 42\n", "'formats.myformat' must be a mapping"),
    ('[formats.myformat]\ndescription = "x"\n', "formats.myformat: required key 'format' missing"),
    ("[formats.myformat]\nformat = 42\n", "formats.myformat: 'format' key must be a string"),
    ('[formats.default]\nformat = "{id}"\n', "override of builtin format 'default' not permitted"),
    ('[formats.myformat]\nformat = "{id.f58}\n', ""),
])
def test_bad_user_config_names_its_file(tmp_path, text, message):
    (tmp_path / "flux").mkdir()
    path = tmp_path / "flux" / "flux-jobs.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as exc:
        JOBS.configured({"XDG_CONFIG_HOME": str(tmp_path), "XDG_CONFIG_DIRS": ""})
    assert str(exc.value).startswith(f"{path}") and message in str(exc.value)


def test_a_subcommand_s_formats_are_in_its_table(tmp_path, flux, monkeypatch):
    (tmp_path / "flux").mkdir()
    (tmp_path / "flux" / "flux-resource.toml").write_text('[list.formats.mine]\nformat = "{nodelist}"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert RESOURCE_LIST.configured({"XDG_CONFIG_HOME": str(tmp_path)}).formats["mine"] == (None, "{nodelist}")
    assert flux.out("resource", "list", "-o", "mine") == "NODELIST\nnode[0-3]\n"
    assert "mine" in flux.out("resource", "list", "-o", "help")
