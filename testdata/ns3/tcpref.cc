// tcpref: ns-3's side of the TCP-like model's reference cases
// (docs/traffic.md, "The model against kernel TCP and ns-3"). One or two
// bulk TCP flows, each from a sender node of its own through a router to
// one receiver, across a bottleneck of --rate, --delay one way and a
// drop-tail queue of --queue packets (no traffic-control layer above it),
// with --loss random loss in each direction of the bottleneck. Each flow
// starts at a random time in its first half second. Prints each flow's
// goodput after --warmup, as netem/kernel's Bulk measures it.
//
//   --cc=cubic,reno   the flows' controllers (cubic, reno: ns-3's
//                     TcpLinuxReno, newreno, bbr)
//   --delack=2        segments per delayed ACK (1: every segment at once)
//
// Build and run: see README.md beside this file.

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

static TypeId
controller(const std::string& name)
{
    if (name == "cubic")
        return TypeId::LookupByName("ns3::TcpCubic");
    if (name == "reno")
        return TypeId::LookupByName("ns3::TcpLinuxReno");
    if (name == "newreno")
        return TypeId::LookupByName("ns3::TcpNewReno");
    if (name == "bbr")
        return TypeId::LookupByName("ns3::TcpBbr");
    NS_FATAL_ERROR("unknown controller " << name);
}

int
main(int argc, char* argv[])
{
    std::string ccs = "cubic,cubic";
    std::string rate = "10Mbps";
    double delayMs = 25;
    uint32_t queue = 42;
    double loss = 0;
    uint32_t delack = 2;
    double seconds = 30;
    double warmup = 2;
    uint32_t run = 1;
    CommandLine cmd(__FILE__);
    cmd.AddValue("cc", "the flows' controllers, comma-separated", ccs);
    cmd.AddValue("rate", "bottleneck rate", rate);
    cmd.AddValue("delay", "one-way delay, ms", delayMs);
    cmd.AddValue("queue", "bottleneck queue, packets", queue);
    cmd.AddValue("loss", "random loss each way of the bottleneck", loss);
    cmd.AddValue("delack", "segments per delayed ACK", delack);
    cmd.AddValue("seconds", "length of the run", seconds);
    cmd.AddValue("warmup", "start left out of the goodput", warmup);
    cmd.AddValue("run", "the random stream's run number", run);
    cmd.Parse(argc, argv);
    RngSeedManager::SetRun(run);

    std::vector<std::string> names;
    std::stringstream ss(ccs);
    for (std::string s; std::getline(ss, s, ',');)
        names.push_back(s);

    // Linux's: 1448-byte segments with timestamps, SACK, an initial
    // window of 10, a 200 ms minimum RTO, buffers large enough not to
    // bound the window.
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delack));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(3 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(3 << 20));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));

    size_t n = names.size();
    NodeContainer senders;
    senders.Create(n);
    Ptr<Node> router = CreateObject<Node>();
    Ptr<Node> receiver = CreateObject<Node>();
    InternetStackHelper stack;
    stack.Install(senders);
    stack.Install(router);
    stack.Install(receiver);
    for (size_t i = 0; i < n; i++)
    {
        Ptr<TcpL4Protocol> tcp = senders.Get(i)->GetObject<TcpL4Protocol>();
        tcp->SetAttribute("SocketType", TypeIdValue(controller(names[i])));
    }

    Ipv4AddressHelper addr;
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("1Gbps"));
    access.SetChannelAttribute("Delay", StringValue("0ms"));
    for (size_t i = 0; i < n; i++)
    {
        NetDeviceContainer d = access.Install(senders.Get(i), router);
        std::ostringstream base;
        base << "10.1." << i + 1 << ".0";
        addr.SetBase(base.str().c_str(), "255.255.255.0");
        addr.Assign(d);
    }
    PointToPointHelper neck;
    neck.SetDeviceAttribute("DataRate", StringValue(rate));
    neck.SetChannelAttribute("Delay", TimeValue(MicroSeconds(uint64_t(delayMs * 1000))));
    neck.SetQueue("ns3::DropTailQueue", "MaxSize",
                  QueueSizeValue(QueueSize(std::to_string(queue) + "p")));
    NetDeviceContainer nd = neck.Install(router, receiver);
    addr.SetBase("10.2.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ni = addr.Assign(nd);
    // The device's queue alone is the bottleneck's (Assign installed
    // the default queue disc).
    TrafficControlHelper::Default().Uninstall(nd);
    if (loss > 0)
    {
        for (uint32_t k = 0; k < 2; k++)
        {
            Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
            em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
            em->SetAttribute("ErrorRate", DoubleValue(loss));
            nd.Get(k)->SetAttribute("ReceiveErrorModel", PointerValue(em));
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // Each flow starts at a random time in its first half second, drawn
    // from the run's stream: without loss nothing else differs between
    // runs.
    Ptr<UniformRandomVariable> start = CreateObject<UniformRandomVariable>();
    start->SetAttribute("Max", DoubleValue(0.5));
    std::vector<Ptr<PacketSink>> sinks;
    for (size_t i = 0; i < n; i++)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sa = sink.Install(receiver);
        sa.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(sa.Get(0)));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(ni.GetAddress(1), port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(128 << 10));
        ApplicationContainer ba = bulk.Install(senders.Get(i));
        ba.Start(Seconds(start->GetValue()));
        ba.Stop(Seconds(seconds));
    }
    std::vector<uint64_t> at(n);
    Simulator::Schedule(Seconds(warmup), [&]() {
        for (size_t i = 0; i < n; i++)
            at[i] = sinks[i]->GetTotalRx();
    });
    Simulator::Stop(Seconds(seconds));
    Simulator::Run();
    double sum = 0;
    for (size_t i = 0; i < n; i++)
    {
        double g = (sinks[i]->GetTotalRx() - at[i]) * 8.0 / (seconds - warmup) / 1e6;
        sum += g;
        std::printf("%s %.2f ", names[i].c_str(), g);
    }
    std::printf("Mbit/s (sum %.2f), delack %u, run %u\n", sum, delack, run);
    Simulator::Destroy();
    return 0;
}
