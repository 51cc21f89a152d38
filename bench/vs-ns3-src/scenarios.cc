// The ns-3 side of bench/vs-ns3: the router-chain TCP transfer, the
// N-flow dumbbell and the router star, set up to match the elvis NDL that
// bench/vs-ns3 generates (see README.md next to this file for every
// choice). Prints one JSON object on its last line of stdout.
//
//   scenarios chain    [--hops=32] [--bytes=20000000]
//   scenarios dumbbell [--flows=10] [--cc=cubic|newreno] [--seconds=20] [--queue=100]
//   scenarios star     --n=N [--routing=static|global] [--weak-es=0|1]
//
// Options for the fidelity study (docs/validation.md), all scenarios:
//   --tc=none|default   none (the default here): no queue disc, the device
//                       queue is the only queue, as elvis' drop-tail NIC /
//                       qdisc queue; default: keep the queue disc that
//                       Ipv4AddressHelper installs (ns-3's own default)
//   --recovery=prr|classic   TcpPrrRecovery (ns-3's default, as Linux) or
//                       TcpClassicRecovery (RFC 5681/6582 window inflation)
//   --delack=2          DelAckCount (1 = no delayed ACKs)
//   --minrto-ms=200     TcpSocketBase::MinRto
//   --devq=100          device queue of every router port (packets)
//   --cwnd-trace=FILE   CSV (flow, time_ns, cwnd_bytes) of every change of
//                       each TCP sender's congestion window

// Individual headers rather than the *-module.h ones: the module headers
// take many minutes to compile on a small machine.
#include "ns3/abort.h"
#include "ns3/application-container.h"
#include "ns3/boolean.h"
#include "ns3/bulk-send-application.h"
#include "ns3/bulk-send-helper.h"
#include "ns3/command-line.h"
#include "ns3/config.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-global-routing-helper.h"
#include "ns3/ipv4-interface-container.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/ipv4-static-routing.h"
#include "ns3/ipv4.h"
#include "ns3/net-device-container.h"
#include "ns3/node-container.h"
#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/packet-sink-helper.h"
#include "ns3/packet-sink.h"
#include "ns3/packet.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/queue-disc.h"
#include "ns3/queue-size.h"
#include "ns3/queue.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/string.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-cubic.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-linux-reno.h"
#include "ns3/tcp-prr-recovery.h"
#include "ns3/tcp-recovery-ops.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/traffic-control-layer.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace {

// Every counter the scenarios report.
uint64_t g_queueDrops = 0;     // device queue drops (DropTailQueue "Drop")
uint64_t g_tcDrops = 0;        // dropped by the traffic-control layer because
                               // the device queue was stopped (full) and no
                               // queue disc holds the packet
uint64_t g_qdiscDrops = 0;     // queue disc drops (only with --tc=default)
uint64_t g_retransmits = 0;    // data segments sent below the highest sent
uint64_t g_fastRecoveries = 0; // CongState -> CA_RECOVERY
uint64_t g_timeouts = 0;       // CongState -> CA_LOSS
uint64_t g_udpReceived = 0;    // star: datagrams at the sink
std::map<const TcpSocketBase*, SequenceNumber32> g_highTx;

void
QueueDrop(Ptr<const Packet>)
{
    g_queueDrops++;
}

void
TcDrop(Ptr<const Packet>)
{
    g_tcDrops++;
}

// Without a queue disc, a packet for a device whose queue is full (flow
// control has stopped it) is dropped by the traffic-control layer, not by
// the device queue: count both.
void
HookNodes(NodeContainer nodes)
{
    for (uint32_t i = 0; i < nodes.GetN(); i++)
    {
        bool ok = nodes.Get(i)->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext(
            "TcDrop",
            MakeCallback(&TcDrop));
        NS_ABORT_MSG_IF(!ok, "no TrafficControlLayer TcDrop trace");
    }
}

void
QdiscDrop(Ptr<const QueueDiscItem>)
{
    g_qdiscDrops++;
}

void
TcpTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s)
{
    if (p->GetSize() == 0)
    {
        return;
    }
    SequenceNumber32 end = h.GetSequenceNumber() + p->GetSize();
    auto it = g_highTx.find(PeekPointer(s));
    if (it == g_highTx.end())
    {
        g_highTx[PeekPointer(s)] = end;
    }
    else if (h.GetSequenceNumber() < it->second)
    {
        g_retransmits++;
        if (end > it->second)
        {
            it->second = end;
        }
    }
    else
    {
        it->second = end;
    }
}

void
CongState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    if (now == TcpSocketState::CA_RECOVERY)
    {
        g_fastRecoveries++;
    }
    else if (now == TcpSocketState::CA_LOSS)
    {
        g_timeouts++;
    }
}

// Hooks the TCP traces of a BulkSendApplication's socket (created when
// the application starts).
// --cwnd-trace=FILE: one CSV row (flow, time_ns, cwnd_bytes) per change of
// a sender's congestion window, to set beside elvis' --tcp-trace.
std::ofstream g_cwndOut;

void
CwndChange(uint32_t flow, uint32_t, uint32_t now)
{
    g_cwndOut << flow << ',' << Simulator::Now().GetNanoSeconds() << ',' << now << '\n';
}

void
HookSender(Ptr<BulkSendApplication> app, uint32_t flow)
{
    Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
    NS_ABORT_MSG_IF(!s, "no TCP socket");
    s->TraceConnectWithoutContext("Tx", MakeCallback(&TcpTx));
    s->TraceConnectWithoutContext("CongState", MakeCallback(&CongState));
    if (g_cwndOut.is_open())
    {
        s->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&CwndChange, flow));
    }
}

// A receiver like elvis' bulk_receive: transfer time from accept to the
// last byte, steady goodput over the second half of the bytes.
struct Receiver
{
    uint64_t target = 0;
    uint64_t got = 0;
    double first = -1, half = -1, halfAt = 0, end = -1;

    void Rx(Ptr<const Packet> p, const Address&)
    {
        if (first < 0)
        {
            first = Simulator::Now().GetSeconds();
        }
        got += p->GetSize();
        if (half < 0 && target && got >= target / 2)
        {
            half = Simulator::Now().GetSeconds();
            halfAt = got;
        }
        if (end < 0 && target && got >= target)
        {
            end = Simulator::Now().GetSeconds();
        }
    }
};

struct Options
{
    std::string tc = "none";
    std::string recovery = "prr";
    std::string cc = "cubic";
    uint32_t delack = 2;
    uint32_t minRtoMs = 200;
    uint32_t devq = 100;
};

// elvis frames carry a 14-byte Ethernet header, ns-3's PointToPoint a
// 2-byte PPP header. Scaling every ns-3 link rate by (1500+2)/(1500+14)
// makes a full-sized frame (1500-byte IP datagram) take exactly as long on
// the wire as in elvis; smaller frames are up to 12 bytes' time shorter.
std::string
Rate(double bps)
{
    std::ostringstream o;
    o << static_cast<uint64_t>(bps * 1502.0 / 1514.0 + 0.5) << "bps";
    return o.str();
}

void
TcpDefaults(const Options& o)
{
    // TcpLinuxReno grows the window per segment acknowledged (Linux, and
    // elvis), ns-3's TcpNewReno per ACK (half the growth with delayed ACKs).
    TypeId cc = o.cc == "cubic"     ? TcpCubic::GetTypeId()
                : o.cc == "newreno" ? TcpLinuxReno::GetTypeId()
                : o.cc == "ns3-newreno"
                    ? TcpNewReno::GetTypeId()
                    : TypeId();
    NS_ABORT_MSG_IF(cc == TypeId(), "unknown --cc " << o.cc);
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(cc));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(o.recovery == "classic" ? TcpClassicRecovery::GetTypeId()
                                                           : TcpPrrRecovery::GetTypeId()));
    // MSS 1448 with timestamps: 1500-byte datagrams, as elvis.
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(o.delack));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(o.minRtoMs)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    // elvis' bulk_send / bulk_receive default SO_SNDBUF / SO_RCVBUF: 4 MiB.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
}

// Removes the queue disc Ipv4AddressHelper installed, unless --tc=default;
// with it, hooks its drop counter.
void
TrafficControl(const Options& o, NetDeviceContainer devs)
{
    if (o.tc == "none")
    {
        TrafficControlHelper().Uninstall(devs);
        return;
    }
    for (uint32_t i = 0; i < devs.GetN(); i++)
    {
        Ptr<TrafficControlLayer> tc = devs.Get(i)->GetNode()->GetObject<TrafficControlLayer>();
        Ptr<QueueDisc> q = tc->GetRootQueueDiscOnDevice(devs.Get(i));
        if (q)
        {
            q->TraceConnectWithoutContext("Drop", MakeCallback(&QdiscDrop));
        }
    }
}

void
HookQueues(NetDeviceContainer devs)
{
    for (uint32_t i = 0; i < devs.GetN(); i++)
    {
        Ptr<PointToPointNetDevice> d = DynamicCast<PointToPointNetDevice>(devs.Get(i));
        bool ok = d->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&QueueDrop));
        NS_ABORT_MSG_IF(!ok, "no queue Drop trace");
    }
}

std::string
QdiscName(Ptr<NetDevice> dev)
{
    Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
    Ptr<QueueDisc> q = tc ? tc->GetRootQueueDiscOnDevice(dev) : nullptr;
    return q ? q->GetInstanceTypeId().GetName() : "none";
}

// One point-to-point link; `aq` / `bq` are the device queues (packets) of
// its two ends.
NetDeviceContainer
Link(Ptr<Node> a, Ptr<Node> b, double bps, Time delay, uint32_t aq, uint32_t bq)
{
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(Rate(bps)));
    p2p.SetChannelAttribute("Delay", TimeValue(delay));
    NetDeviceContainer d = p2p.Install(a, b);
    DynamicCast<PointToPointNetDevice>(d.Get(0))
        ->GetQueue()
        ->SetAttribute("MaxSize", QueueSizeValue(QueueSize(std::to_string(aq) + "p")));
    DynamicCast<PointToPointNetDevice>(d.Get(1))
        ->GetQueue()
        ->SetAttribute("MaxSize", QueueSizeValue(QueueSize(std::to_string(bq) + "p")));
    return d;
}

// A host's own device queue: elvis' senders wait for NIC room (the
// socket holds the rest, like Linux with its qdisc and TSQ); ns-3's TCP
// has no such back-pressure, so a host gets a queue it never fills.
const uint32_t kHostQueue = 100000;

void
PrintTcpCommon(std::ostringstream& j, const Options& o)
{
    j << "\"cc\":\"" << o.cc << "\",\"recovery\":\"" << o.recovery << "\",\"tc\":\"" << o.tc
      << "\",\"delack\":" << o.delack << ",\"min_rto_ms\":" << o.minRtoMs
      << ",\"queue_drops\":" << g_queueDrops << ",\"tc_drops\":" << g_tcDrops
      << ",\"qdisc_drops\":" << g_qdiscDrops
      << ",\"drops\":" << g_queueDrops + g_tcDrops + g_qdiscDrops << ",\"retransmitted_segments\":"
      << g_retransmits << ",\"fast_recoveries\":" << g_fastRecoveries
      << ",\"timeouts\":" << g_timeouts;
}

int
Chain(const Options& o, uint32_t hops, uint64_t bytes)
{
    TcpDefaults(o);
    // iperf -w 512K at the receiver, SO_SNDBUF 2 MiB at the sender.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(2 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(512 << 10));
    NodeContainer nodes(hops + 2); // client, r1..rH, server
    InternetStackHelper stack;
    stack.Install(nodes);
    HookNodes(nodes);
    Ipv4AddressHelper addr;
    Ipv4Address server;
    NetDeviceContainer all;
    for (uint32_t i = 0; i <= hops; i++)
    {
        uint32_t aq = i == 0 ? kHostQueue : o.devq;
        uint32_t bq = i == hops ? kHostQueue : o.devq;
        NetDeviceContainer d =
            Link(nodes.Get(i), nodes.Get(i + 1), 100e6, MicroSeconds(10), aq, bq);
        std::ostringstream base;
        base << "10." << 1 + i / 256 << "." << i % 256 << ".0";
        addr.SetBase(base.str().c_str(), "255.255.255.252");
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        if (i == hops)
        {
            server = ifs.GetAddress(1);
        }
        TrafficControl(o, d);
        HookQueues(d);
        all.Add(d);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                InetSocketAddress(Ipv4Address::GetAny(), 5001));
    ApplicationContainer sinkApp = sinkHelper.Install(nodes.Get(hops + 1));
    Receiver rx;
    rx.target = bytes;
    Ptr<PacketSink> sink = DynamicCast<PacketSink>(sinkApp.Get(0));
    sink->TraceConnectWithoutContext("Rx", MakeCallback(&Receiver::Rx, &rx));
    BulkSendHelper sendHelper("ns3::TcpSocketFactory", InetSocketAddress(server, 5001));
    sendHelper.SetAttribute("MaxBytes", UintegerValue(bytes));
    sendHelper.SetAttribute("SendSize", UintegerValue(1448));
    ApplicationContainer sendApp = sendHelper.Install(nodes.Get(0));
    sinkApp.Start(Seconds(0));
    sendApp.Start(Seconds(0));
    Ptr<BulkSendApplication> app = DynamicCast<BulkSendApplication>(sendApp.Get(0));
    Simulator::Schedule(NanoSeconds(1), &HookSender, app, 0u);
    // PacketSink has no accept trace in 3.37: the transfer is timed from
    // the first data byte, which elvis' accept (the handshake's last ACK)
    // precedes by about one segment's time.
    Simulator::Run();
    double now = Simulator::Now().GetSeconds();
    Simulator::Destroy();

    std::ostringstream j;
    j << "{\"scenario\":\"chain\",\"hops\":" << hops << ",\"bytes\":" << bytes
      << ",\"received\":" << rx.got << ",\"end_s\":" << rx.end
      << ",\"transfer_s\":" << rx.end - rx.first << ",\"sim_time_s\":" << now
      << ",\"steady_goodput_bps\":"
      << (rx.end > rx.half && rx.half >= 0 ? (rx.got - rx.halfAt) * 8.0 / (rx.end - rx.half) : 0)
      << ",";
    PrintTcpCommon(j, o);
    j << "}";
    std::printf("%s\n", j.str().c_str());
    return rx.got == bytes ? 0 : 1;
}

int
Dumbbell(const Options& o, uint32_t flows, double seconds, uint32_t queue)
{
    TcpDefaults(o);
    NodeContainer left(flows), right(flows), routers(2);
    InternetStackHelper stack;
    stack.Install(left);
    stack.Install(right);
    stack.Install(routers);
    HookNodes(left);
    HookNodes(right);
    HookNodes(routers);
    Ipv4AddressHelper addr;
    std::vector<Ipv4Address> rightAddr;
    NetDeviceContainer bottleneck =
        Link(routers.Get(0), routers.Get(1), 10e6, MilliSeconds(20), queue, queue);
    addr.SetBase("10.0.0.0", "255.255.255.252");
    addr.Assign(bottleneck);
    TrafficControl(o, bottleneck);
    HookQueues(bottleneck);
    std::string bottleneckQdisc = QdiscName(bottleneck.Get(0));
    for (uint32_t i = 0; i < flows; i++)
    {
        NetDeviceContainer l =
            Link(left.Get(i), routers.Get(0), 100e6, MilliSeconds(1), kHostQueue, o.devq);
        std::ostringstream b1;
        b1 << "10.1." << i << ".0";
        addr.SetBase(b1.str().c_str(), "255.255.255.252");
        addr.Assign(l);
        TrafficControl(o, l);
        HookQueues(l);
        NetDeviceContainer r =
            Link(right.Get(i), routers.Get(1), 100e6, MilliSeconds(1), kHostQueue, o.devq);
        std::ostringstream b2;
        b2 << "10.2." << i << ".0";
        addr.SetBase(b2.str().c_str(), "255.255.255.252");
        Ipv4InterfaceContainer ri = addr.Assign(r);
        rightAddr.push_back(ri.GetAddress(0));
        TrafficControl(o, r);
        HookQueues(r);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < flows; i++)
    {
        PacketSinkHelper sh("ns3::TcpSocketFactory",
                            InetSocketAddress(Ipv4Address::GetAny(), 5001));
        ApplicationContainer s = sh.Install(right.Get(i));
        s.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(s.Get(0)));
        BulkSendHelper bh("ns3::TcpSocketFactory", InetSocketAddress(rightAddr[i], 5001));
        bh.SetAttribute("MaxBytes", UintegerValue(0));
        bh.SetAttribute("SendSize", UintegerValue(1448));
        ApplicationContainer a = bh.Install(left.Get(i));
        a.Start(Seconds(0));
        Simulator::Schedule(NanoSeconds(1),
                            &HookSender,
                            DynamicCast<BulkSendApplication>(a.Get(0)),
                            i);
    }
    Simulator::Stop(Seconds(seconds));
    Simulator::Run();
    std::ostringstream j;
    j << "{\"scenario\":\"dumbbell\",\"flows\":" << flows << ",\"seconds\":" << seconds
      << ",\"queue\":" << queue << ",\"bottleneck_qdisc\":\"" << bottleneckQdisc
      << "\",\"flow_bytes\":[";
    for (uint32_t i = 0; i < flows; i++)
    {
        j << (i ? "," : "") << sinks[i]->GetTotalRx();
    }
    j << "],";
    PrintTcpCommon(j, o);
    j << "}";
    Simulator::Destroy();
    std::printf("%s\n", j.str().c_str());
    return 0;
}

void
UdpRx(Ptr<Socket> s)
{
    while (Ptr<Packet> p = s->Recv())
    {
        g_udpReceived++;
    }
}

int
Star(const Options& o, uint32_t n, const std::string& routing, bool weakEs)
{
    NodeContainer hosts(n), hub(2); // hub: router, sink
    Ptr<Node> router = hub.Get(0), sinkNode = hub.Get(1);
    InternetStackHelper stack;
    Ipv4StaticRoutingHelper staticHelper;
    if (routing == "static")
    {
        stack.SetRoutingHelper(staticHelper); // only static routes, as elvis' routing='static'
    }
    stack.Install(hosts);
    stack.Install(hub);
    // With the weak end-system model (ns-3's default, as Linux) the
    // router looks for the destination among the addresses of all its
    // interfaces, a scan of N interfaces for every datagram it forwards.
    // No datagram here is for the router, so the strong model changes no
    // result and leaves ns-3 the O(N) route lookup alone; elvis finds a
    // local address with a hash lookup.
    router->GetObject<Ipv4>()->SetAttribute("WeakEsModel", BooleanValue(weakEs));
    HookNodes(hosts);
    HookNodes(hub);
    Ipv4AddressHelper addr;
    // The sink link: the router's port holds every datagram (elvis:
    // qdisc='droptail' limit='inf'), so all N arrive.
    NetDeviceContainer sd = Link(router, sinkNode, 1e9, MicroSeconds(10), n + 16, kHostQueue);
    addr.SetBase("192.168.0.0", "255.255.255.252");
    Ipv4InterfaceContainer si = addr.Assign(sd);
    Ipv4Address sinkAddr = si.GetAddress(1);
    TrafficControl(o, sd);
    HookQueues(sd);
    for (uint32_t i = 0; i < n; i++)
    {
        NetDeviceContainer d =
            Link(hosts.Get(i), router, 1e9, MicroSeconds(10), kHostQueue, o.devq);
        // router .1, host .2, as the elvis file
        Ptr<Ipv4> hip = hosts.Get(i)->GetObject<Ipv4>();
        Ptr<Ipv4> rip = router->GetObject<Ipv4>();
        uint32_t base = (0x0a000000u) + 4u * i;
        int32_t hi = hip->AddInterface(d.Get(0));
        hip->AddAddress(hi, Ipv4InterfaceAddress(Ipv4Address(base + 2), "255.255.255.252"));
        hip->SetUp(hi);
        int32_t ri = rip->AddInterface(d.Get(1));
        rip->AddAddress(ri, Ipv4InterfaceAddress(Ipv4Address(base + 1), "255.255.255.252"));
        rip->SetUp(ri);
        if (routing == "static")
        {
            staticHelper.GetStaticRouting(hip)->SetDefaultRoute(Ipv4Address(base + 1), hi);
        }
        if (o.tc == "default")
        {
            // AddInterface installs no queue disc; ns-3's helper would.
            TrafficControlHelper::Default().Install(d);
            TrafficControl(o, d);
        }
        HookQueues(d);
    }
    if (routing == "static")
    {
        staticHelper.GetStaticRouting(sinkNode->GetObject<Ipv4>())
            ->SetDefaultRoute(si.GetAddress(0), 1);
    }
    else
    {
        Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    }

    Ptr<Socket> sink = Socket::CreateSocket(sinkNode, UdpSocketFactory::GetTypeId());
    sink->Bind(InetSocketAddress(Ipv4Address::GetAny(), 9));
    sink->SetRecvCallback(MakeCallback(&UdpRx));
    for (uint32_t i = 0; i < n; i++)
    {
        Ptr<Socket> s = Socket::CreateSocket(hosts.Get(i), UdpSocketFactory::GetTypeId());
        s->Bind();
        Simulator::ScheduleWithContext(hosts.Get(i)->GetId(),
                                       Seconds(0),
                                       [s, sinkAddr]() {
                                           s->SendTo(Create<Packet>(64),
                                                     0,
                                                     InetSocketAddress(sinkAddr, 9));
                                       });
    }
    Simulator::Run();
    double now = Simulator::Now().GetSeconds();
    Simulator::Destroy();
    std::printf("{\"scenario\":\"star\",\"n\":%u,\"routing\":\"%s\",\"sent\":%u,"
                "\"delivered\":%" PRIu64 ",\"drops\":%" PRIu64 ",\"sim_time_s\":%.9f}\n",
                n,
                routing.c_str(),
                n,
                g_udpReceived,
                g_queueDrops + g_tcDrops + g_qdiscDrops,
                now);
    return g_udpReceived == n ? 0 : 1;
}

} // namespace

int
main(int argc, char** argv)
{
    if (argc < 2)
    {
        std::fprintf(stderr, "usage: scenarios chain|dumbbell|star [--options]\n");
        return 2;
    }
    std::string scenario = argv[1];
    Options o;
    uint32_t hops = 32, flows = 10, queue = 100, n = 1000;
    uint64_t bytes = 20000000;
    double seconds = 20;
    std::string routing = "static";
    bool weakEs = false;
    std::string cwndTrace;
    CommandLine cmd;
    cmd.AddValue("tc", "none or default", o.tc);
    cmd.AddValue("recovery", "prr or classic", o.recovery);
    cmd.AddValue("cc", "cubic, newreno (TcpLinuxReno) or ns3-newreno", o.cc);
    cmd.AddValue("delack", "DelAckCount", o.delack);
    cmd.AddValue("minrto-ms", "MinRto in ms", o.minRtoMs);
    cmd.AddValue("devq", "router device queue, packets", o.devq);
    cmd.AddValue("hops", "chain: routers", hops);
    cmd.AddValue("bytes", "chain: bytes", bytes);
    cmd.AddValue("flows", "dumbbell: flows", flows);
    cmd.AddValue("seconds", "dumbbell: simulated seconds", seconds);
    cmd.AddValue("queue", "dumbbell: bottleneck queue, packets", queue);
    cmd.AddValue("n", "star: hosts", n);
    cmd.AddValue("routing", "star: static or global", routing);
    cmd.AddValue("weak-es", "star: the router's weak end-system model (ns-3's default)", weakEs);
    cmd.AddValue("cwnd-trace", "CSV of every congestion-window change (flow,time_ns,cwnd_bytes)", cwndTrace);
    cmd.Parse(argc - 1, argv + 1);
    if (!cwndTrace.empty())
    {
        g_cwndOut.open(cwndTrace);
        g_cwndOut << "flow,time_ns,cwnd_bytes\n";
    }
    if (scenario == "chain")
    {
        return Chain(o, hops, bytes);
    }
    if (scenario == "dumbbell")
    {
        return Dumbbell(o, flows, seconds, queue);
    }
    if (scenario == "star")
    {
        return Star(o, n, routing, weakEs);
    }
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
}
