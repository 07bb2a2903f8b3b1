"""Two runners with a method of the same name (written for gatefix's tests)."""


class EagerRunner:
    def launch(self, y):
        return y


class GraphRunner:
    def launch(self, y):
        return y
