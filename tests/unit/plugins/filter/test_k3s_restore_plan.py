"""day2('etcd_restore_plan'): the restore probe loops' registered results (stat, slurp; unreachable items
as ignore_unreachable leaves them) turned into k3s.restore_plan's decision."""

import base64

from ansible_collections.cps.gpu_cluster.plugins.filter.day2 import FilterModule

DAY2 = FilterModule().filters()["day2"]


def PLAN(registered, *args):
    return DAY2(registered, "etcd_restore_plan", *args)


SERVERS = ["cp1", "cp2", "cp3"]


def slurp(host, text=None):
    if text is None:  # no marker: slurp failed (failed_when: false)
        return {"item": host, "failed": True, "msg": "file not found"}
    return {"item": host, "content": base64.b64encode(text.encode()).decode()}


def registered(snapshot_on=(), done=None, joined=None):
    down = {"item": "cp1", "unreachable": True, "msg": "container k3s_reset-cp1 is not running"}
    return {
        "snapshot": [down] + [{"item": h, "stat": {"exists": h in snapshot_on}} for h in SERVERS[1:]],
        "restored": [down] + [slurp(h, (done or {}).get(h)) for h in SERVERS[1:]],
        "joined": [down] + [slurp(h, (joined or {}).get(h)) for h in SERVERS[1:]],
    }


def test_first_server_unreachable_snapshot_on_cp3():
    plan = PLAN(registered(snapshot_on=["cp3"]), SERVERS, "cp1", "snap-1", [], False, ["cp1"])
    assert plan["restore_server"] == "cp3" and plan["down"] == ["cp1"] and plan["rejoin"] == ["cp2"]


def test_markers_are_read_stripped_and_resume_the_restore():
    plan = PLAN(registered(snapshot_on=["cp3"], done={"cp2": "snap-1\n"}, joined={"cp3": "snap-1\n"}),
                SERVERS, "cp1", "snap-1", [], False, ["cp1"])
    assert plan["restore_server"] == "cp2" and plan["stop"] == [] and plan["rejoin"] == []


def test_nothing_anywhere_is_a_problem_not_an_exception():
    plan = PLAN(registered(), SERVERS, "cp1", "snap-1", [], False, ["cp1"])
    assert plan["problem"].startswith("snapshot snap-1 is on none of the reachable servers (cp2, cp3)")
