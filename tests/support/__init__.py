"""What the tests share: the pytest plug-in with every shared fixture (``plugin``) and the helper
modules it and the tests import (``relay``, ``bridge``, ``web``, ``waits`` …)."""
