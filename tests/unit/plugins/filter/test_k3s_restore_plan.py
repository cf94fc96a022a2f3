"""day2('etcd_restore_plan'): the restore probe's registered loop (k3s_server_probe per server, as
playbooks/etcd_snapshot.yml registers it; an unreachable item as ignore_unreachable leaves it) turned into
k3s.restore_plan's decision."""

from ansible_collections.cps.gpu_cluster.plugins.filter.day2 import FilterModule

DAY2 = FilterModule().filters()["day2"]


def PLAN(registered, *args):
    return DAY2(registered, "etcd_restore_plan", *args)


SERVERS = ["cp1", "cp2", "cp3"]


def probe(host, snapshot, done, joined):
    """k3s_server_probe's result: a marker the server lacks reads as ''."""
    return {"item": host, "changed": False, "exists": {"snapshot": snapshot},
            "content": {"restored": done or "", "joined": joined or "", "token": ""}}


def registered(snapshot_on=(), done=None, joined=None):
    down = {"item": "cp1", "unreachable": True, "msg": "container k3s_reset-cp1 is not running"}
    return {"probe": [down] + [probe(h, h in snapshot_on, (done or {}).get(h), (joined or {}).get(h)) for h in SERVERS[1:]]}


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
