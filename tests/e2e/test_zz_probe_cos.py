import json, time, httpx
from overseer.events.testing import Stack
from overseer.events.runtime import rpc_request
from tests.support.services import running

async def test_probe(tmp_path, nats_server) -> None:
    stack = Stack(home=tmp_path / "home", nats=nats_server)
    async with running(stack, ("col", "gateway"), gateway={"port": 0}) as services:
        tokens = json.loads((stack.home / "tokens.json").read_text())
        async with httpx.AsyncClient(base_url=services["gateway"].url, headers={"Authorization": f"Bearer {tokens['operator']}"}) as c:
            t=time.perf_counter()
            for i in range(20):
                await c.get("/healthz")
            print("healthz ms", (time.perf_counter()-t)/20*1000)
            t=time.perf_counter()
            for i in range(20):
                await c.get("/v1/cos")
            print("list ms", (time.perf_counter()-t)/20*1000)
        rt = services.runtimes["gateway"]
        t=time.perf_counter()
        for i in range(20):
            await rt.request("col", "list", {})
        print("rpc ms", (time.perf_counter()-t)/20*1000)
