//! GML import (being written).
